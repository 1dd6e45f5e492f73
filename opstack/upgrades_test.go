package opstack

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/forkrules"
)

// upgradeSource is the "upgrade-deposited" source hash of intent (the
// deposit spec: domain 2).
func upgradeSource(intent string) common.Hash {
	return crypto.Keccak256Hash(common.BigToHash(big.NewInt(2)).Bytes(), crypto.Keccak256([]byte(intent)))
}

func TestActivationAt(t *testing.T) {
	jovian, karst := uint64(10), uint64(20)
	cfg := *params.OptimismTestConfig
	cfg.JovianTime, cfg.KarstTime = &jovian, &karst
	for _, c := range []struct {
		name         string
		time, parent uint64
		forks        []forkrules.Fork
		deposits     int
		extraGas     uint64
		firstFrom    common.Address
		firstSource  common.Hash
		lastTo       common.Address
	}{
		{name: "before Jovian", time: 9, parent: 8},
		{name: "Jovian's block", time: 11, parent: 9, forks: []forkrules.Fork{forkrules.Jovian}, deposits: 5,
			firstFrom: common.HexToAddress("0x4210000000000000000000000000000000000006"), firstSource: upgradeSource("Jovian: L1 Block Deployment"),
			lastTo: GasPriceOracle},
		{name: "after Jovian", time: 12, parent: 11},
		{name: "Karst's block", time: 20, parent: 19, forks: []forkrules.Fork{forkrules.Karst}, deposits: 31, extraGas: 55_370_657,
			firstFrom: L1InfoDepositor, firstSource: upgradeSource("Karst 0: ConditionalDeployer Deployment"),
			lastTo: common.HexToAddress("0x4200000000000000000000000000000000000018")},
		{name: "both at once", time: 30, parent: 5, forks: []forkrules.Fork{forkrules.Jovian, forkrules.Karst}, deposits: 36, extraGas: 55_370_657,
			firstFrom: common.HexToAddress("0x4210000000000000000000000000000000000006"), firstSource: upgradeSource("Jovian: L1 Block Deployment"),
			lastTo: common.HexToAddress("0x4200000000000000000000000000000000000018")},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := ActivationAt(&cfg, c.time, c.parent)
			if err != nil {
				t.Fatal(err)
			}
			if Activates(&cfg, c.time, c.parent) != (a != nil) {
				t.Fatal("Activates disagrees with ActivationAt")
			}
			if a == nil {
				if c.deposits != 0 {
					t.Fatal("no activation")
				}
				return
			}
			if len(a.Deposits) != c.deposits || a.ExtraGas != c.extraGas || len(a.Forks) != len(c.forks) {
				t.Fatalf("forks %v, %d deposits, extra gas %d; want %v, %d, %d", a.Forks, len(a.Deposits), a.ExtraGas, c.forks, c.deposits, c.extraGas)
			}
			first, last := a.Deposits[0], a.Deposits[len(a.Deposits)-1]
			from, _ := types.Sender(types.LatestSignerForChainID(big.NewInt(1)), first)
			if !first.IsDepositTx() || from != c.firstFrom || first.SourceHash() != c.firstSource || first.Mint().Sign() != 0 || first.Value().Sign() != 0 {
				t.Fatalf("first deposit: from %v source %v mint %v value %v", from, first.SourceHash(), first.Mint(), first.Value())
			}
			if last.To() == nil || *last.To() != c.lastTo {
				t.Fatalf("last deposit to %v, want %v", last.To(), c.lastTo)
			}
		})
	}
	lagoon := uint64(40)
	cfg.LagoonTime = &lagoon
	if _, err := ActivationAt(&cfg, 40, 39); err == nil {
		t.Fatal("Lagoon's block was given an activation")
	}
}
