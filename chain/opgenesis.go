package chain

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/opstack"
)

// DevL2Source is the superchain-registry chain whose genesis gives the dev
// L2 its predeploys: rehearsal-0-bn-0 is the registry's newest standard
// genesis, with Canyon through Isthmus active at its block 0, so its
// L1Block, GasPriceOracle (isEcotone, isFjord and isIsthmus set) and the
// other implementations are the ones those forks' rules expect. The later
// forks' implementations come from their upgrade transactions (devl2fork.go).
const DevL2Source = "rehearsal-0-bn-0-rehearsal-0-bn"

// DevL2Hardfork is the newest fork the dev L2 runs unless told otherwise
// (--hardfork): the current OP Stack.
const DevL2Hardfork = forkrules.Karst

// DevL2Hardforks are the forks the dev L2 can stop at.
var DevL2Hardforks = []forkrules.Fork{forkrules.Isthmus, forkrules.Jovian, forkrules.Karst}

// devL2Base is the source genesis, loaded and checked against the
// registry's genesis hash once.
var devL2Base = sync.OnceValues(func() (*core.Genesis, error) { return opstack.Genesis(DevL2Source) })

// DevL2Genesis is the built-in OP-stack dev chain at DevL2Hardfork.
func DevL2Genesis() (*core.Genesis, error) { return DevL2GenesisAt(DevL2Hardfork) }

// DevL2GenesisAt is the built-in OP-stack dev chain with every fork through
// hardfork active from block 0 (Isthmus, Jovian or Karst): chain id
// DevChainID, Bedrock through Isthmus active (so Shanghai, Cancun and Prague
// too), the source chain's EIP-1559 parameters, genesis header fields and
// every account of its genesis (the L2 predeploys and their proxies, the
// preinstalls, the funded precompile addresses), the state the later forks'
// upgrade transactions leave (devl2fork.go), plus the ten dev accounts with
// 10000 ETH each. Each call returns a fresh copy.
func DevL2GenesisAt(hardfork forkrules.Fork) (*core.Genesis, error) {
	if !slices.Contains(DevL2Hardforks, hardfork) {
		return nil, fmt.Errorf("the dev L2 runs %v, not %v", DevL2Hardforks, hardfork)
	}
	src, err := devL2Base()
	if err != nil {
		return nil, fmt.Errorf("dev L2 genesis from %s: %w", DevL2Source, err)
	}
	cfg, err := devL2Config(src, hardfork, 0)
	if err != nil {
		return nil, err
	}
	denom, elasticity := eip1559.DecodeHoloceneExtraData(src.ExtraData)
	upgraded, err := devL2Alloc(hardfork)
	if err != nil {
		return nil, err
	}
	alloc := make(types.GenesisAlloc, len(upgraded)+len(DevKeys))
	for a, acct := range upgraded {
		alloc[a] = copyAccount(acct)
	}
	eth := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	for _, a := range DevAccounts() {
		alloc[a] = types.Account{Balance: new(big.Int).Mul(big.NewInt(10000), eth)}
	}
	g := &core.Genesis{
		Config:    cfg,
		Timestamp: 0,
		// Holocene reads the EIP-1559 denominator and elasticity of the next
		// block from its parent's extra data: keep the source's encoding
		// (Jovian's adds the minimum base fee, 0).
		ExtraData:     common.CopyBytes(src.ExtraData),
		GasLimit:      150_000_000, // as the L1 dev chain
		Difficulty:    new(big.Int),
		Coinbase:      src.Coinbase,
		BaseFee:       new(big.Int).Set(src.BaseFee),
		ExcessBlobGas: u64(0),
		BlobGasUsed:   u64(0),
		Alloc:         alloc,
	}
	if hardfork >= forkrules.Jovian {
		g.ExtraData = eip1559.EncodeJovianExtraData(denom, elasticity, 0)
	}
	return g, nil
}

// devL2Config is the dev L2's config: every fork through Isthmus active
// from genesis, then the later ones through hardfork, hardfork itself from
// time at (0: genesis too). No interop (Lagoon), nothing op-geth only names.
func devL2Config(src *core.Genesis, hardfork forkrules.Fork, at uint64) (*params.ChainConfig, error) {
	cfg := *src.Config
	cfg.ChainID = big.NewInt(DevChainID)
	opt := *src.Config.Optimism
	cfg.Optimism = &opt
	for _, t := range []**uint64{&cfg.ShanghaiTime, &cfg.CancunTime, &cfg.PragueTime, &cfg.RegolithTime, &cfg.CanyonTime,
		&cfg.EcotoneTime, &cfg.FjordTime, &cfg.GraniteTime, &cfg.HoloceneTime, &cfg.IsthmusTime} {
		*t = u64(0)
	}
	cfg.JovianTime, cfg.KarstTime, cfg.LagoonTime = nil, nil, nil
	for f, t := range map[forkrules.Fork]**uint64{forkrules.Jovian: &cfg.JovianTime, forkrules.Karst: &cfg.KarstTime} {
		switch {
		case f < hardfork:
			*t = u64(0)
		case f == hardfork:
			*t = u64(at)
		}
	}
	if err := cfg.CheckConfigForkOrder(); err != nil {
		return nil, fmt.Errorf("dev L2 config: %w", err)
	}
	return forkrules.Normalize(&cfg)
}

func copyAccount(acct types.Account) types.Account {
	acct.Storage = maps.Clone(acct.Storage)
	acct.Code = common.CopyBytes(acct.Code)
	if acct.Balance != nil {
		acct.Balance = new(big.Int).Set(acct.Balance)
	}
	return acct
}

// DevL2SystemConfig is the dev L2's SystemConfig (batcher, L1 data fee
// scalars): the registry source chain's at its genesis, which are the
// OP stack's standard values.
func DevL2SystemConfig() (opstack.SystemConfig, error) {
	return opstack.GenesisSystemConfig(DevL2Source)
}

// devL2Hashes are DevL2GenesisAt's block hashes, by fork, computed once.
var devL2Hashes sync.Map // forkrules.Fork → func() (common.Hash, error)

// DevL2HardforkOf is the fork of the built-in dev chain whose genesis hash is
// hash (false: not one of them).
func DevL2HardforkOf(hash common.Hash) (forkrules.Fork, bool) {
	for _, f := range DevL2Hardforks {
		if h, err := DevL2GenesisHashAt(f); err == nil && h == hash {
			return f, true
		}
	}
	return forkrules.None, false
}

// DevL2GenesisHash is the hash of the OP-stack dev chain's genesis block.
func DevL2GenesisHash() (common.Hash, error) { return DevL2GenesisHashAt(DevL2Hardfork) }

// DevL2GenesisHashAt is the hash of DevL2GenesisAt(hardfork)'s block.
func DevL2GenesisHashAt(hardfork forkrules.Fork) (common.Hash, error) {
	f, _ := devL2Hashes.LoadOrStore(hardfork, sync.OnceValues(func() (common.Hash, error) {
		g, err := DevL2GenesisAt(hardfork)
		if err != nil {
			return common.Hash{}, err
		}
		return g.ToBlock().Hash(), nil
	}))
	return f.(func() (common.Hash, error))()
}
