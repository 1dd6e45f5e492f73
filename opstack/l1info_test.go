package opstack

import (
	"bytes"
	"errors"
	"math/big"
	"reflect"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
)

func sampleInfo() *L1Info {
	return &L1Info{
		Number: 21_000_000, Time: 1_750_000_000, BaseFee: big.NewInt(7_000_000_000), BlobBaseFee: big.NewInt(3),
		Hash: common.HexToHash("0xc00e5d67c2755389aded7d8b151cbd5bcdf7ed275ad5e028b664880fc7581c77"), SequenceNumber: 4,
		BatcherHash:   common.BytesToHash(common.HexToAddress("0x5050f69a9786f081509234f1a7f4684b5e5b76c9").Bytes()),
		BaseFeeScalar: 2269, BlobBaseFeeScalar: 1_055_762, OperatorFeeScalar: 7, OperatorFeeConstant: 9, DAFootprintGasScalar: 400,
	}
}

func TestCalldataRoundTripsAndMatchesOpGeth(t *testing.T) {
	in := sampleInfo()
	for _, tc := range []struct {
		l    Layout
		size int
		sel  []byte
	}{
		{LayoutEcotone, 164, types.EcotoneL1AttributesSelector},
		{LayoutIsthmus, 176, types.IsthmusL1AttributesSelector},
		{LayoutJovian, 178, types.JovianL1AttributesSelector},
	} {
		data, err := in.Calldata(tc.l)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) != tc.size || !bytes.Equal(data[:4], tc.sel) {
			t.Fatalf("layout %d: %d bytes, selector %x", tc.l, len(data), data[:4])
		}
		out, l, err := ParseL1Info(data)
		if err != nil || l != tc.l {
			t.Fatalf("layout %d: parsed as %d: %v", tc.l, l, err)
		}
		want := *in
		if tc.l < LayoutIsthmus {
			want.OperatorFeeScalar, want.OperatorFeeConstant = 0, 0
		}
		if tc.l < LayoutJovian {
			want.DAFootprintGasScalar = 0
		}
		if !reflect.DeepEqual(*out, want) {
			t.Fatalf("layout %d: round trip\n got %+v\nwant %+v", tc.l, out, want)
		}
	}
	// op-geth reads the DA footprint scalar from the same offsets.
	data, _ := in.Calldata(LayoutJovian)
	if s, err := types.ExtractDAFootprintGasScalar(data); err != nil || s != 400 {
		t.Fatalf("op-geth reads DA footprint scalar %d, %v", s, err)
	}
	// Fields are packed: the L1 origin number sits at bytes 28..36.
	if !bytes.Equal(data[28:36], []byte{0, 0, 0, 0, 0x01, 0x40, 0x6f, 0x40}) {
		t.Fatalf("number bytes %x", data[28:36])
	}
	if _, _, err := ParseL1Info(data[:177]); err == nil {
		t.Fatal("truncated calldata parsed")
	}
	if _, err := (&L1Info{}).Calldata(LayoutIsthmus); err == nil {
		t.Fatal("calldata without fees encoded")
	}
}

func TestLayoutFollowsForksAndActivationBlocks(t *testing.T) {
	at := func(v uint64) *uint64 { return &v }
	cfg := &params.ChainConfig{
		ChainID: big.NewInt(1), LondonBlock: big.NewInt(0), BedrockBlock: big.NewInt(0), Optimism: &params.OptimismConfig{EIP1559Elasticity: 6, EIP1559Denominator: 50},
		RegolithTime: at(0), CanyonTime: at(0), EcotoneTime: at(10), FjordTime: at(10), GraniteTime: at(10), HoloceneTime: at(10),
		IsthmusTime: at(20), JovianTime: at(30),
	}
	for _, tc := range []struct {
		time, parent uint64
		want         Layout
		err          error
	}{
		{8, 6, 0, ErrPreEcotone},
		{10, 8, 0, ErrPreEcotone}, // Ecotone's activation block: Bedrock layout
		{12, 10, LayoutEcotone, nil},
		{20, 18, LayoutEcotone, nil}, // Isthmus activation
		{22, 20, LayoutIsthmus, nil},
		{30, 28, LayoutIsthmus, nil}, // Jovian activation
		{32, 30, LayoutJovian, nil},
	} {
		got, err := LayoutFor(cfg, tc.time, tc.parent)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("time %d (parent %d): layout %d, %v; want %d, %v", tc.time, tc.parent, got, err, tc.want, tc.err)
		}
	}
}

func TestDepositTransaction(t *testing.T) {
	at := func(v uint64) *uint64 { return &v }
	cfg := &params.ChainConfig{
		ChainID: big.NewInt(1), LondonBlock: big.NewInt(0), BedrockBlock: big.NewInt(0), Optimism: &params.OptimismConfig{EIP1559Elasticity: 6, EIP1559Denominator: 50},
		RegolithTime: at(0), CanyonTime: at(0), EcotoneTime: at(0), FjordTime: at(0), GraniteTime: at(0), HoloceneTime: at(0), IsthmusTime: at(0),
	}
	in := sampleInfo()
	tx, err := in.Deposit(cfg, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !tx.IsDepositTx() || tx.IsSystemTx() || tx.Gas() != L1InfoGas || *tx.To() != L1Block || tx.Mint() == nil || tx.Mint().Sign() != 0 || tx.Value().Sign() != 0 {
		t.Fatalf("deposit fields: %+v", tx)
	}
	from, err := types.Sender(types.LatestSigner(cfg), tx)
	if err != nil || from != L1InfoDepositor {
		t.Fatalf("sender %s %v", from, err)
	}
	if want := "0x0586c503340591999b8b38bc9834bb16aec7d5bc00eb5587ab139c9ddab81977"; tx.SourceHash().Hex() != want {
		// the L1-info source hash of the rollup node's own test vector
		t.Fatalf("source hash %s, want %s", tx.SourceHash().Hex(), want)
	}
	if len(tx.Data()) != 176 {
		t.Fatalf("Isthmus chain: %d bytes of calldata", len(tx.Data()))
	}
	// The encoding round-trips through op-geth's transaction codec.
	raw, _ := tx.MarshalBinary()
	if raw[0] != types.DepositTxType {
		t.Fatalf("type byte %x", raw[0])
	}
	var back types.Transaction
	if err := back.UnmarshalBinary(raw); err != nil || back.Hash() != tx.Hash() {
		t.Fatalf("decode: %v", err)
	}
}

func TestUserDepositSourceHashDomain(t *testing.T) {
	h := common.HexToHash("0xc00e5d67c2755389aded7d8b151cbd5bcdf7ed275ad5e028b664880fc7581c77")
	inner := crypto.Keccak256(h[:], common.BigToHash(big.NewInt(4)).Bytes())
	want := crypto.Keccak256Hash(make([]byte, 32), inner)
	if got := UserDepositSourceHash(h, 4); got != want {
		t.Fatalf("user deposit source %s, want %s", got, want)
	}
	if UserDepositSourceHash(h, 4) == L1InfoSourceHash(h, 4) {
		t.Fatal("domains not separated")
	}
}

func TestRegistryNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   uint64
	}{
		{"op", params.OPMainnetChainID}, {"op-mainnet", params.OPMainnetChainID}, {"OP-Sepolia", 11155420},
		{"unichain", 130}, {"unichain-sepolia", 1301}, {"ink", 57073}, {"ink-sepolia", 763373}, {"130", 130},
	} {
		id, err := ChainID(tc.name)
		if err != nil || id != tc.id {
			t.Errorf("%s: %d, %v; want %d", tc.name, id, err, tc.id)
		}
	}
	_, err := ChainID("base")
	if !errors.Is(err, ErrUnknownChain) || !strings.Contains(err.Error(), "unichain-mainnet") {
		t.Fatalf("unknown chain error: %v", err)
	}
	cfg, err := ChainConfig("unichain")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ChainID.Uint64() != 130 || cfg.Optimism == nil || cfg.IsthmusTime == nil || !cfg.IsOptimismCanyon(0) {
		t.Fatalf("unichain config: %+v", cfg)
	}
}

func TestDevL1Origins(t *testing.T) {
	d := &DevL1{GenesisTime: 1000, GenesisNumber: 50}
	var parent *L1Info
	var got [][2]uint64
	for l2 := uint64(1002); l2 <= 1026; l2 += 2 {
		parent = d.Next(parent, l2)
		got = append(got, [2]uint64{parent.Number, parent.SequenceNumber})
		if parent.Hash != d.Hash(parent.Number) || parent.Time != 1000+(parent.Number-50)*12 || parent.BaseFee.Int64() != 1e9 {
			t.Fatalf("origin %+v", parent)
		}
	}
	// 12 s L1 blocks under 2 s L2 blocks: six L2 blocks per origin; the
	// genesis block is sequence number 0 of origin 50.
	want := [][2]uint64{{50, 1}, {50, 2}, {50, 3}, {50, 4}, {50, 5}, {51, 0}, {51, 1}, {51, 2}, {51, 3}, {51, 4}, {51, 5}, {52, 0}, {52, 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("origins %v, want %v", got, want)
	}
}

// TestDepositDecodesToItself: the deposit built here is the one decoding
// its bytes gives (a zero mint, not none), so a block being built and the
// same block read back from storage serve the same transaction.
func TestDepositDecodesToItself(t *testing.T) {
	at := func(v uint64) *uint64 { return &v }
	cfg := &params.ChainConfig{
		ChainID: big.NewInt(1), LondonBlock: big.NewInt(0), BedrockBlock: big.NewInt(0), Optimism: &params.OptimismConfig{EIP1559Elasticity: 6, EIP1559Denominator: 50},
		RegolithTime: at(0), CanyonTime: at(0), EcotoneTime: at(0), FjordTime: at(0), GraniteTime: at(0), HoloceneTime: at(0), IsthmusTime: at(0),
	}
	tx, err := sampleInfo().Deposit(cfg, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tx.MarshalBinary()
	back := new(types.Transaction)
	if err := back.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	a, _ := tx.MarshalJSON()
	b, _ := back.MarshalJSON()
	if string(a) != string(b) {
		t.Fatalf("built %s\ndecoded %s", a, b)
	}
}

// TestDevL1OriginNeverGoesBack: a longer L1 block time from one L2 block to
// the next (a restart with another --l1.block-time) keeps the parent's
// origin instead of going back to an older L1 block.
func TestDevL1OriginNeverGoesBack(t *testing.T) {
	short := &DevL1{GenesisTime: 0, BlockTime: 2}
	long := &DevL1{GenesisTime: 0, BlockTime: 12}
	parent := short.Next(nil, 1000) // origin 500
	next := long.Next(parent, 1002) // 12 s blocks would give origin 83
	if next.Number != parent.Number || next.Time != parent.Time || next.SequenceNumber != parent.SequenceNumber+1 {
		t.Fatalf("origin %d/%d at %d after %d/%d", next.Number, next.SequenceNumber, next.Time, parent.Number, parent.SequenceNumber)
	}
	// Once time catches up, it moves on.
	later := long.Next(next, 6012) // 6012/12 = 501
	if later.Number != 501 || later.SequenceNumber != 0 {
		t.Fatalf("origin %d/%d", later.Number, later.SequenceNumber)
	}
}

// TestGenesisSystemConfig: the dev L2's source chain carries the OP stack's
// standard scalars (in Ecotone's packed "scalar" word) and its batcher.
func TestGenesisSystemConfig(t *testing.T) {
	sc, err := GenesisSystemConfig("rehearsal-0-bn-0-rehearsal-0-bn")
	if err != nil {
		t.Fatal(err)
	}
	if sc.BaseFeeScalar != 1368 || sc.BlobBaseFeeScalar != 810_949 || sc.Batcher != common.HexToAddress("0xD059234409A70327B48c03F7BbD5317a758E315B") {
		t.Fatalf("%+v", sc)
	}
	if _, err := GenesisSystemConfig("no-such-chain"); err == nil {
		t.Fatal("unknown chain accepted")
	}
}
