package forkrules_test

import (
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/opstack"
)

// TestRegistryChains: the forks of chains that pre-confirm, from op-geth's
// embedded registry, at 2026-11-28.
func TestRegistryChains(t *testing.T) {
	const now = 1795824000 // 2026-11-28 00:00 UTC
	for _, c := range []struct {
		name  string
		fork  forkrules.Fork
		karst uint64
	}{
		{"op", forkrules.Karst, 1783526401},
		{"unichain", forkrules.Karst, 1783526401},
		{"ink", forkrules.Karst, 1783526401},
		{"soneium", forkrules.Karst, 1783526401},
		{"op-sepolia", forkrules.Karst, 1781712001},
		{"worldchain", forkrules.Jovian, 0},
	} {
		cfg, err := opstack.ChainConfig(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := forkrules.Latest(cfg, now); got != c.fork {
			t.Errorf("%s: %v active, want %v", c.name, got, c.fork)
		}
		var karst uint64
		if kt := forkrules.Karst.Time(cfg); kt != nil {
			karst = *kt
		}
		if karst != c.karst {
			t.Errorf("%s: Karst at %d, want %d", c.name, karst, c.karst)
		}
		if err := forkrules.Check(cfg, now); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if karst != 0 && (forkrules.Latest(cfg, karst-1) != forkrules.Jovian || !forkrules.Karst.Activates(cfg, karst, karst-1)) {
			t.Errorf("%s: Karst does not activate at %d", c.name, karst)
		}
	}
}

// TestLagoonRefused: a chain scheduling Lagoon runs until its activation
// and is refused from there, with the fork named.
func TestLagoonRefused(t *testing.T) {
	cfg := opConfig(true)
	at := uint64(100)
	cfg.LagoonTime = &at
	if err := forkrules.Check(cfg, at-1); err != nil {
		t.Fatalf("before Lagoon: %v", err)
	}
	err := forkrules.Check(cfg, at)
	var ue *forkrules.UnsupportedError
	if !errors.As(err, &ue) || ue.Fork != "Lagoon" || !strings.Contains(err.Error(), "Lagoon") {
		t.Fatalf("at Lagoon: %v", err)
	}
	if forkrules.Check(l1Config, 1<<40) != nil || forkrules.Latest(l1Config, 1<<40) != forkrules.None {
		t.Fatal("an L1 chain has OP forks")
	}
}

// BenchmarkNewEVM: an EVM per block or call; Karst's extra EIP makes
// op-geth copy its jump table.
func BenchmarkNewEVM(b *testing.B) {
	for name, cfg := range map[string]*params.ChainConfig{"jovian": jovianConfig, "karst": karstConfig} {
		b.Run(name, func(b *testing.B) {
			ctx := vm.BlockContext{BlockNumber: big.NewInt(1), Time: 1, Random: new(common.Hash), BaseFee: new(big.Int)}
			b.ReportAllocs()
			for b.Loop() {
				forkrules.NewEVM(ctx, nil, cfg, vm.Config{})
			}
		})
	}
}
