package forkrules_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/forkrules"
)

// Chains: L1 with Osaka (the dev L1 chain, go-ethereum's own rules), an OP
// chain at Karst and the same at Jovian (op-geth's last rules).
var (
	l1Config     = chain.DevGenesis().Config
	karstConfig  = opConfig(true)
	jovianConfig = opConfig(false)
)

func opConfig(karst bool) *params.ChainConfig {
	c := *params.OptimismTestConfig
	c.ChainID = big.NewInt(901)
	if karst {
		zero := uint64(0)
		c.KarstTime = &zero
	}
	return &c
}

var (
	sender   = common.HexToAddress("0x1000000000000000000000000000000000000001")
	clzProbe = common.HexToAddress("0x2000000000000000000000000000000000000002")
	// clzProbe returns CLZ of its first calldata word.
	clzCode = []byte{0x60, 0x00, 0x35, 0x1e, 0x60, 0x00, 0x52, 0x60, 0x20, 0x60, 0x00, 0xf3}
)

// outcome is what a transaction's execution shows: the error that made it
// invalid, or its return data, gas used and VM error.
type outcome struct {
	invalid error
	ret     []byte
	gasUsed uint64
	vmErr   error
}

// run executes a message from sender to `to` with data and gas on cfg as the
// executors do: an EVM with the block's rules, then op-geth.
func run(t *testing.T, cfg *params.ChainConfig, to common.Address, data []byte, gas uint64, deposit bool) outcome {
	t.Helper()
	return runWith(t, cfg, forkrules.NewEVM, to, data, gas, deposit)
}

// opgethEVM is the EVM op-geth's block processor builds when given a
// normalized config and the precompile override (an import).
func opgethEVM(ctx vm.BlockContext, db vm.StateDB, cfg *params.ChainConfig, c vm.Config) *vm.EVM {
	n, err := forkrules.Normalize(cfg)
	if err != nil {
		panic(err)
	}
	c.PrecompileOverrides = forkrules.PrecompileOverride
	return vm.NewEVM(ctx, db, n, c)
}

func runWith(t *testing.T, cfg *params.ChainConfig, newEVM func(vm.BlockContext, vm.StateDB, *params.ChainConfig, vm.Config) *vm.EVM,
	to common.Address, data []byte, gas uint64, deposit bool) outcome {
	t.Helper()
	st, err := state.New(types.EmptyRootHash, state.NewDatabaseForTesting())
	if err != nil {
		t.Fatal(err)
	}
	st.SetBalance(sender, uint256.NewInt(1e18), tracing.BalanceChangeUnspecified)
	st.SetCode(clzProbe, clzCode, tracing.CodeChangeUnspecified)
	header := &types.Header{
		Number: big.NewInt(1), Time: 1, Difficulty: new(big.Int), BaseFee: new(big.Int), GasLimit: 60_000_000,
	}
	ctx := core.NewEVMBlockContext(header, nil, &common.Address{}, cfg, st)
	msg := &core.Message{
		From: sender, To: &to, Data: data, GasLimit: gas, Value: new(big.Int),
		GasPrice: new(big.Int), GasFeeCap: new(big.Int), GasTipCap: new(big.Int), IsDepositTx: deposit,
	}
	if deposit {
		msg.Mint = new(big.Int)
	}
	evm := newEVM(ctx, st, cfg, vm.Config{})
	res, err := core.ApplyMessage(evm, msg, core.NewGasPool(ctx.GasLimit))
	if err != nil {
		return outcome{invalid: err}
	}
	return outcome{ret: res.ReturnData, gasUsed: res.UsedGas, vmErr: res.Err}
}

func word(v uint64) []byte { return common.BigToHash(new(big.Int).SetUint64(v)).Bytes() }

// modexpInput is MODEXP's input for base^exp % mod.
func modexpInput(base, exp, mod []byte) []byte {
	in := append(word(uint64(len(base))), word(uint64(len(exp)))...)
	in = append(in, word(uint64(len(mod)))...)
	in = append(in, base...)
	in = append(in, exp...)
	return append(in, mod...)
}

// p256Input is a P256VERIFY input signed by a fresh key (valid) or with its
// last byte changed (invalid).
func p256Input(t *testing.T, valid bool) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hash := sha256.Sum256([]byte("preconf"))
	r, s, err := ecdsa.Sign(rand.Reader, key, hash[:])
	if err != nil {
		t.Fatal(err)
	}
	in := append(hash[:], common.BigToHash(r).Bytes()...)
	in = append(in, common.BigToHash(s).Bytes()...)
	in = append(in, common.BigToHash(key.X).Bytes()...)
	in = append(in, common.BigToHash(key.Y).Bytes()...)
	if !valid {
		in[len(in)-1] ^= 1
	}
	return in
}

// pairingInput is n copies of (G1, G2), the curves' generators (EIP-197's
// encoding, the G2 coordinates' imaginary parts first).
func pairingInput(n int) []byte {
	dec := func(s string) []byte { v, _ := new(big.Int).SetString(s, 10); return common.BigToHash(v).Bytes() }
	pair := bytes.Join([][]byte{
		word(1), word(2),
		dec("11559732032986387107991004021392285783925812861821192530917403151452391805634"),
		dec("10857046999023057135944570762232829481370756359578518086990519993285655852781"),
		dec("4082367875863433681332203403145435568316851327593401208105741076214120093531"),
		dec("8495653923123431417604973247489272438418190587263600148770280649306958101930"),
	}, nil)
	return bytes.Repeat(pair, n)
}

var (
	modexpAddr  = common.BytesToAddress([]byte{0x05})
	pairingAddr = common.BytesToAddress([]byte{0x08})
	p256Addr    = common.BytesToAddress([]byte{0x01, 0x00})
)

type call struct {
	name string
	to   common.Address
	data []byte
}

func calls(t *testing.T) []call {
	big1025 := bytes.Repeat([]byte{0xff}, 1025)
	return []call{
		{"CLZ of 1", clzProbe, word(1)},
		{"CLZ of 0", clzProbe, word(0)},
		{"CLZ of 2^255", clzProbe, common.BigToHash(new(big.Int).Lsh(big.NewInt(1), 255)).Bytes()},
		{"MODEXP small", modexpAddr, modexpInput([]byte{3}, []byte{0x01, 0x00, 0x01}, []byte{0x65})},
		{"MODEXP 64-byte operands", modexpAddr, modexpInput(bytes.Repeat([]byte{7}, 64), bytes.Repeat([]byte{9}, 40), bytes.Repeat([]byte{0xfd}, 64))},
		{"MODEXP base over 1024 bytes", modexpAddr, modexpInput(big1025, []byte{3}, []byte{0x65})},
		{"MODEXP modulus of 1024 bytes", modexpAddr, modexpInput([]byte{2}, []byte{3}, bytes.Repeat([]byte{0xfb}, 1024))},
		{"P256VERIFY valid", p256Addr, p256Input(t, true)},
		{"P256VERIFY invalid", p256Addr, p256Input(t, false)},
		{"bn256Pairing 2 pairs", pairingAddr, pairingInput(2)},
		{"bn256Pairing 300 pairs", pairingAddr, pairingInput(300)},
	}
}

// TestKarstIsL1Osaka: a call on an OP chain at Karst gives what it gives on
// L1 with Osaka (go-ethereum's rules): return data, gas used, VM error.
func TestKarstIsL1Osaka(t *testing.T) {
	for _, c := range calls(t) {
		t.Run(c.name, func(t *testing.T) {
			l1 := run(t, l1Config, c.to, c.data, 16_000_000, false)
			for name, newEVM := range map[string]func(vm.BlockContext, vm.StateDB, *params.ChainConfig, vm.Config) *vm.EVM{
				"NewEVM": forkrules.NewEVM, "op-geth's with the override": opgethEVM,
			} {
				op := runWith(t, karstConfig, newEVM, c.to, c.data, 16_000_000, false)
				if l1.invalid != nil || op.invalid != nil {
					t.Fatalf("invalid: L1 %v, Karst (%s) %v", l1.invalid, name, op.invalid)
				}
				if !bytes.Equal(l1.ret, op.ret) || l1.gasUsed != op.gasUsed || fmt.Sprint(l1.vmErr) != fmt.Sprint(op.vmErr) {
					t.Fatalf("L1 Osaka: ret %x gas %d err %v\nKarst (%s): ret %x gas %d err %v", l1.ret, l1.gasUsed, l1.vmErr, name, op.ret, op.gasUsed, op.vmErr)
				}
			}
		})
	}
}

// TestJovianIsOpGeth: before Karst an OP chain runs op-geth's rules, which
// differ from Osaka's on every Karst rule (so the test above can fail).
func TestJovianIsOpGeth(t *testing.T) {
	// CLZ is an invalid opcode; MODEXP over 1,024 bytes succeeds.
	for _, name := range []string{"CLZ of 1", "MODEXP base over 1024 bytes"} {
		for _, c := range calls(t) {
			if c.name != name {
				continue
			}
			karst := run(t, karstConfig, c.to, c.data, 16_000_000, false)
			jovian := run(t, jovianConfig, c.to, c.data, 16_000_000, false)
			if (karst.vmErr == nil) == (jovian.vmErr == nil) {
				t.Errorf("%s: Karst err %v, Jovian err %v; want one to fail", name, karst.vmErr, jovian.vmErr)
			}
		}
	}
	// Prices, by the contracts' own RequiredGas (a transaction's gas can hide
	// them under EIP-7623's calldata floor).
	karst := forkrules.At(karstConfig, big.NewInt(1), 1).Precompiles()
	jovian := forkrules.At(jovianConfig, big.NewInt(1), 1).Precompiles()
	l1 := forkrules.At(l1Config, big.NewInt(1), 1).Precompiles()
	for _, c := range []struct {
		name          string
		addr          common.Address
		in            []byte
		karst, jovian uint64
	}{
		{"P256VERIFY", p256Addr, p256Input(t, true), 6900, 3450},
		{"MODEXP small", modexpAddr, modexpInput([]byte{3}, []byte{0x01, 0x00, 0x01}, []byte{0x65}), 500, 200},
		{"bn256Pairing 2 pairs", pairingAddr, pairingInput(2), 113000, 113000},
	} {
		k, j, o := karst[c.addr].RequiredGas(c.in), jovian[c.addr].RequiredGas(c.in), l1[c.addr].RequiredGas(c.in)
		if k != c.karst || j != c.jovian || o != k {
			t.Errorf("%s: Karst %d, Jovian %d, L1 Osaka %d; want %d, %d, %d", c.name, k, j, o, c.karst, c.jovian, c.karst)
		}
	}
}

// TestPairingCap: 301 pairs are refused on Karst (the call fails, its gas
// consumed), accepted on L1 and at Jovian (427 pairs there).
func TestPairingCap(t *testing.T) {
	in := pairingInput(301)
	const gas = 16_000_000
	l1 := run(t, l1Config, pairingAddr, in, gas, false)
	if l1.vmErr != nil || len(l1.ret) != 32 {
		t.Fatalf("L1: ret %x err %v", l1.ret, l1.vmErr)
	}
	if j := run(t, jovianConfig, pairingAddr, in, gas, false); j.vmErr != nil || j.gasUsed != l1.gasUsed {
		t.Fatalf("Jovian: gas %d err %v, L1 gas %d", j.gasUsed, j.vmErr, l1.gasUsed)
	}
	op := run(t, karstConfig, pairingAddr, in, gas, false)
	if op.vmErr == nil || !strings.Contains(op.vmErr.Error(), "pairing input size") || op.gasUsed != gas {
		t.Fatalf("Karst: ret %x gas %d err %v; want the call refused with its gas consumed", op.ret, op.gasUsed, op.vmErr)
	}
}

// TestGasCap: a transaction over 2^24 gas is invalid on Karst as on L1
// Osaka, with the same error; a deposit over it executes; Jovian has no cap.
func TestGasCap(t *testing.T) {
	over := forkrules.TxGasCap + 1
	l1 := run(t, l1Config, clzProbe, word(1), over, false)
	op := run(t, karstConfig, clzProbe, word(1), over, false)
	if !errors.Is(l1.invalid, core.ErrGasLimitTooHigh) || op.invalid == nil || l1.invalid.Error() != op.invalid.Error() {
		t.Fatalf("over the cap: L1 %v, Karst %v", l1.invalid, op.invalid)
	}
	if at := run(t, karstConfig, clzProbe, word(1), forkrules.TxGasCap, false); at.invalid != nil || at.vmErr != nil {
		t.Fatalf("at the cap: %v %v", at.invalid, at.vmErr)
	}
	if d := run(t, karstConfig, clzProbe, word(1), over, true); d.invalid != nil || d.vmErr != nil {
		t.Fatalf("deposit over the cap: %v %v", d.invalid, d.vmErr)
	}
	if j := run(t, jovianConfig, clzProbe, word(1), over, false); j.invalid != nil {
		t.Fatalf("Jovian: %v", j.invalid)
	}
	if n, err := forkrules.Normalize(jovianConfig); err != nil || n != jovianConfig || n.OsakaTime != nil {
		t.Fatalf("Normalize changed a Jovian config: %v", err)
	}
	bad := *karstConfig
	one := uint64(1)
	bad.OsakaTime = &one
	if _, err := forkrules.Normalize(&bad); err == nil {
		t.Fatal("Normalize took Osaka and Karst at different times")
	}
}
