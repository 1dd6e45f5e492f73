package fork

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/remote"
)

// The chain rules a fork executes by come from a chain config, never from
// guessing what kind of chain it is:
//  1. --genesis FILE: its config;
//  2. the upstream's chain id is one op-geth knows: Ethereum's public
//     networks, or an OP-stack chain of op-geth's superchain registry;
//  3. otherwise every fork the fork block's header implies, active from
//     genesis: London (base fee), Shanghai (withdrawals root), Cancun (blob
//     gas), Prague (requests hash), and Osaka when the upstream's eth_config
//     lists its P256VERIFY precompile (no header field says so); blob
//     schedule and deposit contract from eth_config when it serves them.
//     OP-stack rules cannot be told from a header: a fork block that
//     starts with a deposit transaction (an OP-stack chain outside the
//     registry, e.g. Base) is refused with a request for --genesis.
//
// The built-in OP-stack dev chain (a preconf dev node upstream) is known by
// its genesis hash, between 2 and 3.

// knownNetworks are the public Ethereum networks op-geth has configs for.
var knownNetworks = map[uint64]struct {
	name   string
	config *params.ChainConfig
}{
	1:        {"mainnet", params.MainnetChainConfig},
	11155111: {"sepolia", params.SepoliaChainConfig},
	17000:    {"holesky", params.HoleskyChainConfig},
	560048:   {"hoodi", params.HoodiChainConfig},
}

// rulesOf is a copy of cfg running as chain id.
func rulesOf(cfg *params.ChainConfig, id *big.Int) *params.ChainConfig {
	c := *cfg
	c.ChainID = new(big.Int).Set(id)
	return &c
}

// knownRules is the config op-geth has for chain id, if any.
func knownRules(id uint64) (*params.ChainConfig, string, error) {
	if n, ok := knownNetworks[id]; ok {
		return n.config, "op-geth's " + n.name + " config", nil
	}
	cfg, err := opstack.ChainConfig(strconv.FormatUint(id, 10))
	if errors.Is(err, opstack.ErrUnknownChain) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	return cfg, fmt.Sprintf("op-geth's superchain registry (chain %d)", id), nil
}

// ethConfig is the part of an eth_config (EIP-7910) answer inference uses.
type ethConfig struct {
	Current *struct {
		BlobSchedule    *params.BlobConfig        `json:"blobSchedule"`
		Precompiles     map[string]common.Address `json:"precompiles"`
		SystemContracts map[string]common.Address `json:"systemContracts"`
	} `json:"current"`
}

// inferRules is a config with every fork active from genesis that h (the
// fork block's header) implies, refined by the upstream's eth_config.
func inferRules(ctx context.Context, client *remote.Client, h *types.Header) (*params.ChainConfig, string, error) {
	if h.BaseFee == nil {
		return nil, "", errors.New("the fork block has no base fee (pre-London): give the chain's rules with --genesis")
	}
	if h.Difficulty != nil && h.Difficulty.Sign() != 0 {
		return nil, "", errors.New("the fork block is proof-of-work: only post-merge chains can be forked")
	}
	zero := func() *uint64 { v := uint64(0); return &v }
	c := &params.ChainConfig{
		HomesteadBlock: big.NewInt(0), EIP150Block: big.NewInt(0), EIP155Block: big.NewInt(0), EIP158Block: big.NewInt(0),
		ByzantiumBlock: big.NewInt(0), ConstantinopleBlock: big.NewInt(0), PetersburgBlock: big.NewInt(0),
		IstanbulBlock: big.NewInt(0), MuirGlacierBlock: big.NewInt(0), BerlinBlock: big.NewInt(0),
		LondonBlock: big.NewInt(0), ArrowGlacierBlock: big.NewInt(0), GrayGlacierBlock: big.NewInt(0),
		MergeNetsplitBlock: big.NewInt(0), TerminalTotalDifficulty: big.NewInt(0),
		BlobScheduleConfig: &params.BlobScheduleConfig{
			Cancun: params.DefaultCancunBlobConfig, Prague: params.DefaultPragueBlobConfig, Osaka: params.DefaultOsakaBlobConfig,
		},
	}
	forks := []string{"London"}
	if h.WithdrawalsHash != nil {
		c.ShanghaiTime = zero()
		forks = append(forks, "Shanghai")
	}
	if h.ExcessBlobGas != nil {
		c.CancunTime = zero()
		forks = append(forks, "Cancun")
	}
	if h.RequestsHash != nil {
		c.PragueTime = zero()
		forks = append(forks, "Prague")
	}
	var ec ethConfig
	if err := client.Call(ctx, &ec, "eth_config"); err == nil && ec.Current != nil {
		if _, ok := ec.Current.Precompiles["P256VERIFY"]; ok && c.PragueTime != nil {
			c.OsakaTime = zero()
			forks = append(forks, "Osaka (eth_config)")
		}
		if bs := ec.Current.BlobSchedule; bs != nil && bs.Target > 0 {
			switch {
			case c.OsakaTime != nil:
				c.BlobScheduleConfig.Osaka = bs
			case c.PragueTime != nil:
				c.BlobScheduleConfig.Prague = bs
			case c.CancunTime != nil:
				c.BlobScheduleConfig.Cancun = bs
			}
		}
		if a, ok := ec.Current.SystemContracts["DEPOSIT_CONTRACT_ADDRESS"]; ok {
			c.DepositContractAddress = a
		}
	}
	return c, fmt.Sprintf("inferred from block %d: %s active from genesis", h.Number, strings.Join(forks, ", ")), nil
}

// resolveRules picks the fork's chain config (see above) and sets the chain
// id it runs as: --chain-id, else the upstream's. A chain whose rules at the
// fork block preconf does not implement is refused, naming the fork: Base
// (its own forks since Azul), an OP-stack chain past Karst (Lagoon).
func resolveRules(ctx context.Context, client *remote.Client, upstreamID uint64, point *types.Block, cfg *Config) (*params.ChainConfig, string, error) {
	if err := opstack.CheckNotBase(upstreamID, false); err != nil {
		return nil, "", err
	}
	config, source, err := pickRules(ctx, client, upstreamID, point, cfg)
	if err != nil {
		return nil, "", err
	}
	if err := forkrules.Check(config, point.Time()); err != nil {
		return nil, "", fmt.Errorf("rules from %s: %w", source, err)
	}
	return config, source, nil
}

func pickRules(ctx context.Context, client *remote.Client, upstreamID uint64, point *types.Block, cfg *Config) (*params.ChainConfig, string, error) {
	id := new(big.Int).SetUint64(upstreamID)
	if cfg.ChainID != nil {
		id.SetUint64(*cfg.ChainID)
	}
	if g := cfg.Genesis; g != nil {
		if g.Config.ChainID != nil && g.Config.ChainID.Uint64() != upstreamID {
			return nil, "", fmt.Errorf("--genesis is for chain %d, the upstream is chain %d", g.Config.ChainID, upstreamID)
		}
		return rulesOf(g.Config, id), "--genesis", nil
	}
	known, source, err := knownRules(upstreamID)
	if err != nil {
		return nil, "", err
	}
	if known != nil {
		return rulesOf(known, id), source, nil
	}
	dev, err := devL2Rules(ctx, client, upstreamID)
	if err != nil {
		return nil, "", err
	}
	if dev != nil {
		return rulesOf(dev, id), "the built-in OP-stack dev chain (the upstream's genesis is its)", nil
	}
	if txs := point.Transactions(); len(txs) > 0 && txs[0].Type() == types.DepositTxType {
		return nil, "", fmt.Errorf("chain %d is an OP-stack chain (its blocks start with a deposit) that op-geth's superchain registry does not know: give its rules with --genesis FILE (its genesis JSON)", upstreamID)
	}
	inferred, source, err := inferRules(ctx, client, point.Header())
	if err != nil {
		return nil, "", err
	}
	return rulesOf(inferred, id), source, nil
}

// devL2Rules is the built-in OP-stack dev chain's config when the upstream
// runs that chain (a preconf dev node: its chain id and the genesis hash of
// one of its --hardfork choices), so a fork of one needs no --genesis; nil
// otherwise.
func devL2Rules(ctx context.Context, client *remote.Client, upstreamID uint64) (*params.ChainConfig, error) {
	if upstreamID != chain.DevChainID {
		return nil, nil
	}
	g, err := client.HeadByNumber(ctx, remote.Tag(0))
	if err != nil {
		return nil, fmt.Errorf("upstream genesis header: %w", err)
	}
	if g == nil {
		return nil, nil
	}
	for _, f := range chain.DevL2Hardforks {
		want, err := chain.DevL2GenesisHashAt(f)
		if err != nil {
			return nil, err
		}
		if g.Header.Hash() == want {
			dev, err := chain.DevL2GenesisAt(f)
			if err != nil {
				return nil, err
			}
			return dev.Config, nil
		}
	}
	return nil, nil
}

// chainID asks the upstream its chain id.
func chainID(ctx context.Context, client *remote.Client) (uint64, error) {
	var id hexutil.Uint64
	if err := client.Call(ctx, &id, "eth_chainId"); err != nil {
		return 0, fmt.Errorf("upstream chain id: %w", err)
	}
	return uint64(id), nil
}
