package chain

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/opstack"
)

// view calls a contract's view function on the head state of c.
func view(t *testing.T, c *Chain, to common.Address, sig string, args ...[]byte) []byte {
	t.Helper()
	st, err := c.StateAt(c.Head())
	if err != nil {
		t.Fatal(err)
	}
	input := crypto.Keccak256([]byte(sig))[:4]
	for _, a := range args {
		input = append(input, a...)
	}
	head := c.Head()
	evm := vm.NewEVM(core.NewEVMBlockContext(head, c.BlockChain(), &head.Coinbase, c.Config(), st), st, c.Config(), vm.Config{})
	out, _, err := evm.Call(common.Address{0x01}, to, input, 1_000_000, new(uint256.Int))
	if err != nil {
		t.Fatalf("%s: %v", sig, err)
	}
	return out
}

func word(v uint64) []byte { return common.BigToHash(new(big.Int).SetUint64(v)).Bytes() }

func TestDevL2GenesisPredeploys(t *testing.T) {
	for _, f := range DevL2Hardforks {
		t.Run(f.String(), func(t *testing.T) { testDevL2Genesis(t, f) })
	}
}

// implementationSlot is EIP-1967's implementation slot of a proxy.
var implementationSlot = common.HexToHash("0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc")

func testDevL2Genesis(t *testing.T, hardfork forkrules.Fork) {
	g, err := DevL2GenesisAt(hardfork)
	if err != nil {
		t.Fatal(err)
	}
	cfg := g.Config
	if cfg.ChainID.Uint64() != DevChainID || !cfg.IsOptimismIsthmus(0) || !cfg.IsOptimismHolocene(0) || !cfg.IsPrague(big.NewInt(0), 0) ||
		cfg.IsJovian(1<<62) != (hardfork >= forkrules.Jovian) || cfg.IsKarst(1<<62) != (hardfork >= forkrules.Karst) ||
		forkrules.Latest(cfg, 0) != hardfork || cfg.LagoonTime != nil || cfg.Optimism.EIP1559DenominatorCanyon == nil {
		t.Fatalf("config %s", cfg)
	}
	c, err := Open(Config{Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.StateAt(c.Head())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{
		"0x420000000000000000000000000000000000000F", // GasPriceOracle
		"0x4200000000000000000000000000000000000015", // L1Block
		"0x4200000000000000000000000000000000000016", // L2ToL1MessagePasser
		"0x4200000000000000000000000000000000000006", // WETH (not behind a proxy)
		"0x4200000000000000000000000000000000000007", // L2CrossDomainMessenger
		"0x4200000000000000000000000000000000000010", // L2StandardBridge
		"0x4200000000000000000000000000000000000011", // SequencerFeeVault
		"0x4200000000000000000000000000000000000019", // BaseFeeVault
		"0x420000000000000000000000000000000000001A", // L1FeeVault
		"0x420000000000000000000000000000000000001b", // OperatorFeeVault
		"0xc0d3C0d3C0d3C0d3C0d3c0d3C0D3C0d3C0D3000f", // GasPriceOracle implementation
		"0xc0d3C0D3C0D3c0D3C0D3C0d3C0D3c0D3c0d30015", // L1Block implementation
		"0x4e59b44847b379578588920cA78FbF26c0B4956C", // deterministic deployment proxy
		"0xcA11bde05977b3631167028862bE2a173976CA11", // Multicall3
		"0x000F3df6D732807Ef1319fB7B8bB8522d0Beac02", // EIP-4788 beacon roots
		"0x0000F90827F1C53a10cb7A02335B175320002935", // EIP-2935 history storage
	} {
		if len(st.GetCode(common.HexToAddress(a))) == 0 {
			t.Errorf("%s has no code", a)
		}
	}
	for _, a := range DevAccounts() {
		if st.GetBalance(a).Cmp(uint256.MustFromDecimal("10000000000000000000000")) != 0 {
			t.Errorf("dev account %s balance %s", a, st.GetBalance(a))
		}
	}

	gpo := opstack.GasPriceOracle
	for _, flag := range []string{"isEcotone()", "isFjord()", "isIsthmus()"} {
		if out := view(t, c, gpo, flag); !bytes.Equal(out, word(1)) {
			t.Errorf("GasPriceOracle.%s = %x, want true", flag, out)
		}
	}
	// The implementations behind L1Block's proxy: the genesis's, Jovian's
	// (deployed by its upgrade deposit from 0x4210…0006), then Karst's.
	impl := common.BytesToAddress(st.GetState(opstack.L1Block, implementationSlot).Bytes())
	jovianL1Block := crypto.CreateAddress(common.HexToAddress("0x4210000000000000000000000000000000000006"), 0)
	isthmusL1Block := common.HexToAddress("0xc0d3C0D3C0D3c0D3C0D3C0d3C0D3c0D3c0d30015")
	if want := map[forkrules.Fork]bool{forkrules.Isthmus: impl == isthmusL1Block, forkrules.Jovian: impl == jovianL1Block,
		forkrules.Karst: impl != isthmusL1Block && impl != jovianL1Block}[hardfork]; !want || len(st.GetCode(impl)) == 0 {
		t.Errorf("L1Block's implementation is %s", impl)
	}
	if hardfork >= forkrules.Jovian {
		if out := view(t, c, gpo, "isJovian()"); !bytes.Equal(out, word(1)) {
			t.Errorf("GasPriceOracle.isJovian() = %x, want true", out)
		}
	}
	if out := view(t, c, gpo, "decimals()"); !bytes.Equal(out, word(6)) {
		t.Errorf("decimals() = %x", out)
	}
	if out := view(t, c, gpo, "baseFee()"); new(big.Int).SetBytes(out).Cmp(g.BaseFee) != 0 {
		t.Errorf("baseFee() = %x, want the genesis base fee %s", out, g.BaseFee)
	}
	// Fjord's getL1GasUsed: a FastLZ size estimate of the transaction (with
	// room for a signature), at least the minimum; nonzero for any input.
	tx := types.NewTx(&types.DynamicFeeTx{ChainID: cfg.ChainID, Gas: 21000, To: &common.Address{1}, Value: big.NewInt(1), Data: bytes.Repeat([]byte{0xab, 0x01}, 200)})
	raw, _ := tx.MarshalBinary()
	arg := append(append(word(32), word(uint64(len(raw)))...), common.RightPadBytes(raw, (len(raw)+31)/32*32)...)
	if out := view(t, c, gpo, "getL1GasUsed(bytes)", arg); new(big.Int).SetBytes(out).Sign() == 0 {
		t.Errorf("getL1GasUsed = %x", out)
	}
	// Before the first L1-attributes deposit L1Block holds nothing.
	if out := view(t, c, gpo, "l1BaseFee()"); new(big.Int).SetBytes(out).Sign() != 0 {
		t.Errorf("l1BaseFee() at genesis = %x", out)
	}
	// The L1 dev chain is untouched.
	if DevGenesis().Config.Optimism != nil || DevGenesis().Config.ChainID.Uint64() != DevChainID {
		t.Fatal("DevGenesis changed")
	}
	if g2, _ := DevL2GenesisAt(hardfork); g2.ToBlock().Hash() != c.Genesis().Hash() || g2 == g || &g2.Alloc == &g.Alloc {
		t.Fatal("DevL2GenesisAt is not a fresh, identical copy on each call")
	}
	if h, err := DevL2GenesisHashAt(hardfork); err != nil || h != c.Genesis().Hash() {
		t.Fatalf("DevL2GenesisHashAt: %s, %v", h, err)
	}
	if params.OptimismL2ToL1MessagePasser != common.HexToAddress("0x4200000000000000000000000000000000000016") {
		t.Fatal("message passer address")
	}
}
