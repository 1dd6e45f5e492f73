package opstack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/superchain"

	"github.com/preconf/preconf/forkrules"
)

// ErrUnknownChain is a name the embedded superchain registry does not have.
var ErrUnknownChain = errors.New("not in op-geth's superchain registry")

// ChainID resolves a chain of the superchain registry op-geth embeds by
// name: the registry's own "NAME-NETWORK" form ("op-mainnet",
// "unichain-sepolia"), a bare NAME for its mainnet ("op", "unichain",
// "ink"), or the decimal chain id.
func ChainID(name string) (uint64, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if id, err := superchain.ChainIDByName(name); err == nil {
		return id, nil
	}
	if id, err := superchain.ChainIDByName(name + "-mainnet"); err == nil {
		return id, nil
	}
	if id, err := strconv.ParseUint(name, 10, 64); err == nil {
		if _, ok := superchain.Chains[id]; ok {
			return id, nil
		}
	}
	return 0, fmt.Errorf("chain %q: %w (known: %s)", name, ErrUnknownChain, strings.Join(ChainNames(), ", "))
}

// ChainNames are the registry's chains, "NAME-NETWORK", sorted.
func ChainNames() []string { return superchain.ChainNames() }

// ChainConfig is the execution config of a registry chain (fork times, EIP-1559
// parameters) as op-geth derives it for --op-network, normalized for the
// forks op-geth does not execute (forkrules.Normalize).
func ChainConfig(name string) (*params.ChainConfig, error) {
	id, err := ChainID(name)
	if err != nil {
		return nil, err
	}
	ch, err := superchain.GetChain(id)
	if err != nil {
		return nil, err
	}
	cfg, err := ch.Config()
	if err != nil {
		return nil, fmt.Errorf("chain %q: %w", name, err)
	}
	out, err := params.LoadOPStackChainConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("chain %q: %w", name, err)
	}
	// Karst's rules as preconf runs them (Osaka with Karst: see forkrules).
	return forkrules.Normalize(out)
}

// Genesis is a registry chain's genesis, checked against the registry's
// genesis block hash. Decompressing and hashing it takes a moment; follow
// mode needs only ChainConfig.
func Genesis(name string) (*core.Genesis, error) {
	id, err := ChainID(name)
	if err != nil {
		return nil, err
	}
	g, err := core.LoadOPStackGenesis(id)
	if err != nil {
		return nil, fmt.Errorf("chain %q: %w", name, err)
	}
	return g, nil
}

// SystemConfig is the part of an OP-stack chain's L1 SystemConfig that its
// L2 blocks carry in their L1-attributes deposits: the batcher and the L1
// data fee scalars.
type SystemConfig struct {
	Batcher                          common.Address
	BaseFeeScalar, BlobBaseFeeScalar uint32
}

// GenesisSystemConfig is a registry chain's SystemConfig at its genesis.
// The scalars are the registry's explicit ones when it has them, otherwise
// those packed in its "scalar" word (Ecotone's encoding: version byte 1,
// then the blob base fee scalar and the base fee scalar in the last eight
// bytes).
func GenesisSystemConfig(name string) (SystemConfig, error) {
	id, err := ChainID(name)
	if err != nil {
		return SystemConfig{}, err
	}
	ch, err := superchain.GetChain(id)
	if err != nil {
		return SystemConfig{}, err
	}
	cfg, err := ch.Config()
	if err != nil {
		return SystemConfig{}, fmt.Errorf("chain %q: %w", name, err)
	}
	sc := cfg.Genesis.SystemConfig
	out := SystemConfig{Batcher: sc.BatcherAddr}
	switch {
	case sc.BaseFeeScalar != nil && sc.BlobBaseFeeScalar != nil:
		out.BaseFeeScalar, out.BlobBaseFeeScalar = uint32(*sc.BaseFeeScalar), uint32(*sc.BlobBaseFeeScalar)
	case sc.Scalar[0] == 1:
		out.BlobBaseFeeScalar = binary.BigEndian.Uint32(sc.Scalar[24:28])
		out.BaseFeeScalar = binary.BigEndian.Uint32(sc.Scalar[28:32])
	default:
		return SystemConfig{}, fmt.Errorf("chain %q: genesis scalar %s is not in Ecotone's encoding", name, sc.Scalar)
	}
	return out, nil
}
