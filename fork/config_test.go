package fork

import (
	"context"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/remote"
)

func TestKnownRules(t *testing.T) {
	for _, tc := range []struct {
		id       uint64
		known    bool
		optimism bool
	}{
		{1, true, false}, {11155111, true, false}, {10, true, true}, {130, true, true}, {8453, false, false}, {1337, false, false},
	} {
		cfg, source, err := knownRules(tc.id)
		if err != nil {
			t.Fatalf("chain %d: %v", tc.id, err)
		}
		if (cfg != nil) != tc.known {
			t.Fatalf("chain %d: known %v, want %v", tc.id, cfg != nil, tc.known)
		}
		if cfg == nil {
			continue
		}
		if cfg.ChainID.Uint64() != tc.id || (cfg.Optimism != nil) != tc.optimism || source == "" {
			t.Fatalf("chain %d: id %d, optimism %v, source %q", tc.id, cfg.ChainID, cfg.Optimism != nil, source)
		}
	}
}

// ethConfigServer answers eth_config with body (or -32601 when empty).
func ethConfigServer(t *testing.T, body string) *remote.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body == "" {
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"the method eth_config does not exist"}}`))
			return
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":` + body + `}`))
	}))
	t.Cleanup(srv.Close)
	return remote.NewClient(srv.URL, 0)
}

func TestInferRules(t *testing.T) {
	empty := common.Hash{}
	var zero uint64
	prague := &types.Header{Number: big.NewInt(5), Difficulty: new(big.Int), BaseFee: big.NewInt(7),
		WithdrawalsHash: &empty, ExcessBlobGas: &zero, BlobGasUsed: &zero, ParentBeaconRoot: &empty, RequestsHash: &empty}
	osakaConfig := `{"current":{"blobSchedule":{"target":6,"max":9,"baseFeeUpdateFraction":5007716},
		"precompiles":{"ECREC":"0x0000000000000000000000000000000000000001","P256VERIFY":"0x0000000000000000000000000000000000000100"},
		"systemContracts":{"DEPOSIT_CONTRACT_ADDRESS":"0x00000000219ab540356cbb839cbe05303d7705fa"}}}`
	cfg, source, err := inferRules(context.Background(), ethConfigServer(t, osakaConfig), prague)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ShanghaiTime == nil || cfg.CancunTime == nil || cfg.PragueTime == nil || cfg.OsakaTime == nil ||
		cfg.BlobScheduleConfig.Osaka.Max != 9 || cfg.DepositContractAddress != common.HexToAddress("0x00000000219ab540356cbb839cbe05303d7705fa") {
		t.Fatalf("rules %+v (%s)", cfg, source)
	}
	if !strings.Contains(source, "Osaka") {
		t.Fatalf("source %q", source)
	}
	cfg, _, err = inferRules(context.Background(), ethConfigServer(t, ""), prague)
	if err != nil || cfg.PragueTime == nil || cfg.OsakaTime != nil {
		t.Fatalf("without eth_config: %+v %v", cfg, err)
	}
	london := &types.Header{Number: big.NewInt(5), Difficulty: new(big.Int), BaseFee: big.NewInt(7)}
	cfg, _, err = inferRules(context.Background(), ethConfigServer(t, ""), london)
	if err != nil || cfg.ShanghaiTime != nil || cfg.CancunTime != nil {
		t.Fatalf("london: %+v %v", cfg, err)
	}
	if _, _, err := inferRules(context.Background(), ethConfigServer(t, ""), &types.Header{Number: big.NewInt(5), Difficulty: big.NewInt(1), BaseFee: big.NewInt(1)}); err == nil {
		t.Fatal("a proof-of-work head was accepted")
	}
	if _, _, err := inferRules(context.Background(), ethConfigServer(t, ""), &types.Header{Number: big.NewInt(5), Difficulty: new(big.Int)}); err == nil {
		t.Fatal("a pre-London head was accepted")
	}
}

// An OP-stack chain the registry does not know is refused, not guessed.
func TestUnknownOPStackChain(t *testing.T) {
	empty := common.Hash{}
	h := &types.Header{Number: big.NewInt(5), Difficulty: new(big.Int), BaseFee: big.NewInt(7), WithdrawalsHash: &empty}
	deposit := types.NewTx(&types.DepositTx{Gas: 1_000_000, Data: []byte{1}})
	block := types.NewBlockWithHeader(h).WithBody(types.Body{Transactions: types.Transactions{deposit}})
	_, _, err := resolveRules(context.Background(), ethConfigServer(t, ""), 424242, block, &Config{})
	if err == nil || !strings.Contains(err.Error(), "--genesis") {
		t.Fatalf("unknown OP-stack chain: %v", err)
	}
	// Base runs its own forks since Azul: refused, naming them.
	_, _, err = resolveRules(context.Background(), ethConfigServer(t, ""), 8453, block, &Config{})
	if err == nil || !strings.Contains(err.Error(), "Azul") || !strings.Contains(err.Error(), "Denim") {
		t.Fatalf("Base: %v", err)
	}
}
