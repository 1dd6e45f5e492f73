package chain

import (
	"fmt"
	"maps"
	"math/big"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/opstack"
)

// DevL2Source is the superchain-registry chain whose genesis gives the dev
// L2 its predeploys: rehearsal-0-bn-0 is the registry's newest standard
// genesis, with Canyon through Isthmus active at its block 0, so its
// L1Block, GasPriceOracle (isEcotone, isFjord and isIsthmus set) and the
// other implementations are the ones those forks' rules expect. No embedded
// genesis has Jovian's implementations (Jovian upgrades them with deposits
// in its activation block), so the dev L2 stops at Isthmus.
const DevL2Source = "rehearsal-0-bn-0-rehearsal-0-bn"

// devL2Base is the source genesis, loaded and checked against the
// registry's genesis hash once.
var devL2Base = sync.OnceValues(func() (*core.Genesis, error) { return opstack.Genesis(DevL2Source) })

// DevL2Genesis is the built-in OP-stack dev chain, shaped like Base: chain id
// DevChainID, Bedrock through Isthmus active from block 0 (so Shanghai,
// Cancun and Prague too), the source chain's EIP-1559 parameters, genesis
// header fields and every account of its genesis (the L2 predeploys and
// their proxies, the preinstalls, the funded precompile addresses), plus
// the ten dev accounts with 10000 ETH each. Each call returns a fresh copy.
func DevL2Genesis() (*core.Genesis, error) {
	src, err := devL2Base()
	if err != nil {
		return nil, fmt.Errorf("dev L2 genesis from %s: %w", DevL2Source, err)
	}
	cfg := *src.Config
	cfg.ChainID = big.NewInt(DevChainID)
	opt := *src.Config.Optimism
	cfg.Optimism = &opt
	// Every fork through Isthmus from genesis; nothing the predeploys do not
	// implement (Jovian), no interop (Lagoon), nothing op-geth only names.
	for _, t := range []**uint64{&cfg.ShanghaiTime, &cfg.CancunTime, &cfg.PragueTime, &cfg.RegolithTime, &cfg.CanyonTime,
		&cfg.EcotoneTime, &cfg.FjordTime, &cfg.GraniteTime, &cfg.HoloceneTime, &cfg.IsthmusTime} {
		*t = u64(0)
	}
	cfg.JovianTime, cfg.KarstTime, cfg.LagoonTime = nil, nil, nil
	if err := cfg.CheckConfigForkOrder(); err != nil {
		return nil, fmt.Errorf("dev L2 config: %w", err)
	}

	alloc := make(types.GenesisAlloc, len(src.Alloc)+len(DevKeys))
	for a, acct := range src.Alloc {
		acct.Storage = maps.Clone(acct.Storage)
		acct.Code = common.CopyBytes(acct.Code)
		if acct.Balance != nil {
			acct.Balance = new(big.Int).Set(acct.Balance)
		}
		alloc[a] = acct
	}
	eth := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	for _, a := range DevAccounts() {
		alloc[a] = types.Account{Balance: new(big.Int).Mul(big.NewInt(10000), eth)}
	}
	return &core.Genesis{
		Config:    &cfg,
		Timestamp: 0,
		// Holocene reads the EIP-1559 denominator and elasticity of the next
		// block from its parent's extra data: keep the source's encoding.
		ExtraData:     common.CopyBytes(src.ExtraData),
		GasLimit:      150_000_000, // as the L1 dev chain: Base-sized blocks
		Difficulty:    new(big.Int),
		Coinbase:      src.Coinbase,
		BaseFee:       new(big.Int).Set(src.BaseFee),
		ExcessBlobGas: u64(0),
		BlobGasUsed:   u64(0),
		Alloc:         alloc,
	}, nil
}

// DevL2SystemConfig is the dev L2's SystemConfig (batcher, L1 data fee
// scalars): the registry source chain's at its genesis, which are the
// OP stack's standard values.
func DevL2SystemConfig() (opstack.SystemConfig, error) {
	return opstack.GenesisSystemConfig(DevL2Source)
}

// devL2Hash is DevL2Genesis's block hash, computed once.
var devL2Hash = sync.OnceValues(func() (common.Hash, error) {
	g, err := DevL2Genesis()
	if err != nil {
		return common.Hash{}, err
	}
	return g.ToBlock().Hash(), nil
})

// DevL2GenesisHash is the hash of the OP-stack dev chain's genesis block.
func DevL2GenesisHash() (common.Hash, error) { return devL2Hash() }
