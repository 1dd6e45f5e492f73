package harness

import (
	"errors"
	"io/fs"
	"math/big"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/preconf/preconf/internal/peers"
)

// TestDeployUniswap: the npm artifacts deploy into genesis accounts: the
// pair holds the reserves' storage and each contract its code.
func TestDeployUniswap(t *testing.T) {
	repo, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	g, u, err := UniswapGenesis(filepath.Join(repo, UniswapArtifacts))
	if errors.Is(err, fs.ErrNotExist) {
		peers.Missing(t, err.Error())
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]common.Address{"token A": u.TokenA, "token B": u.TokenB, "factory": u.Factory, "pair": u.Pair} {
		if len(g.Alloc[a].Code) == 0 || len(g.Alloc[a].Storage) == 0 {
			t.Errorf("%s %s: %d bytes of code, %d slots", name, a, len(g.Alloc[a].Code), len(g.Alloc[a].Storage))
		}
	}
	// UniswapV2Pair slot 8 packs reserve0 (112 bits), reserve1 and the
	// block timestamp: both reserves are UniswapReserve.
	slot8 := g.Alloc[u.Pair].Storage[common.BigToHash(big.NewInt(8))].Big()
	mask := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 112), big.NewInt(1))
	r0 := new(big.Int).And(slot8, mask)
	r1 := new(big.Int).And(new(big.Int).Rsh(slot8, 112), mask)
	if r0.Cmp(UniswapReserve) != 0 || r1.Cmp(UniswapReserve) != 0 {
		t.Errorf("reserves %v %v, want %v", r0, r1, UniswapReserve)
	}
	if _, ok := g.Alloc[u.Trader]; ok {
		t.Error("the trader is an account of its own; its tokens live in the tokens' storage")
	}
}
