package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/holiman/uint256"
)

// Uniswap V2 in the bench genesis, from npm's @uniswap/v2-core build
// artifacts (tests/clients/node_modules, installed by scripts/setup-clients):
// two test tokens, the factory and their pair with liquidity, deployed by
// running their constructors and calls in an EVM over an empty state, whose
// resulting accounts (code, storage, nonces) become genesis accounts. Every
// node then holds the same deployed contracts at the same addresses.
type Uniswap struct {
	TokenA, TokenB, Factory, Pair common.Address
	// Trader holds TraderTokens of each token and no ETH; simulated calls
	// come from it.
	Trader common.Address
	// Token0 is the pair's token0 (the lower address).
	Token0 common.Address
	// Reserve is each token's reserve in the pair.
	Reserve *big.Int
	ABI     map[string]abi.ABI // "ERC20", "UniswapV2Pair"
	alloc   types.GenesisAlloc
}

var (
	uniDeployer = common.HexToAddress("0x00000000000000000000000000000000000d0d00")
	uniTrader   = common.HexToAddress("0x00000000000000000000000000000000000d0d01")
	// UniswapReserve of each token is put into the pair; TraderTokens go to
	// the trader; the tokens' supply is 1e30.
	UniswapReserve = new(big.Int).Exp(big.NewInt(10), big.NewInt(24), nil)
	TraderTokens   = new(big.Int).Exp(big.NewInt(10), big.NewInt(21), nil)
)

// UniswapArtifacts is where the bench reads the artifacts, relative to the
// repository root.
const UniswapArtifacts = "tests/clients/node_modules/@uniswap/v2-core/build"

type artifact struct {
	ABI      abi.ABI
	Bytecode []byte
}

func readArtifact(dir, name string) (artifact, error) {
	raw, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		return artifact{}, fmt.Errorf("%w (run scripts/setup-clients)", err)
	}
	var a struct {
		ABI      json.RawMessage `json:"abi"`
		Bytecode string          `json:"bytecode"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return artifact{}, fmt.Errorf("%s: %w", name, err)
	}
	parsed, err := abi.JSON(strings.NewReader(string(a.ABI)))
	if err != nil {
		return artifact{}, fmt.Errorf("%s: %w", name, err)
	}
	return artifact{ABI: parsed, Bytecode: common.FromHex(a.Bytecode)}, nil
}

// DeployUniswap deploys the contracts over an empty state under g's rules
// and returns their accounts.
func DeployUniswap(dir string, g *core.Genesis) (*Uniswap, error) {
	erc20, err := readArtifact(dir, "ERC20")
	if err != nil {
		return nil, err
	}
	factory, err := readArtifact(dir, "UniswapV2Factory")
	if err != nil {
		return nil, err
	}
	pair, err := readArtifact(dir, "UniswapV2Pair")
	if err != nil {
		return nil, err
	}
	statedb, err := state.New(types.EmptyRootHash, state.NewDatabaseForTesting())
	if err != nil {
		return nil, err
	}
	storage := map[common.Address]map[common.Hash]common.Hash{}
	hooks := &tracing.Hooks{OnStorageChange: func(a common.Address, slot, _, v common.Hash) {
		if storage[a] == nil {
			storage[a] = map[common.Hash]common.Hash{}
		}
		storage[a][slot] = v
	}}
	db := state.NewHookedState(statedb, hooks)
	header := &types.Header{Number: new(big.Int), Time: g.Timestamp, GasLimit: g.GasLimit, Difficulty: new(big.Int), BaseFee: new(big.Int)}
	ctx := core.NewEVMBlockContext(header, nil, &common.Address{}, g.Config, statedb)
	evm := vm.NewEVM(ctx, db, g.Config, vm.Config{Tracer: hooks, NoBaseFee: true})
	rules := g.Config.Rules(header.Number, true, header.Time)
	statedb.Prepare(rules, uniDeployer, common.Address{}, nil, nil, nil)

	const gas = 30_000_000
	create := func(a artifact, args ...any) (common.Address, error) {
		in, err := a.ABI.Pack("", args...)
		if err != nil {
			return common.Address{}, err
		}
		_, addr, _, err := evm.Create(uniDeployer, append(a.Bytecode, in...), gas, new(uint256.Int))
		return addr, err
	}
	call := func(a abi.ABI, to common.Address, method string, args ...any) ([]byte, error) {
		in, err := a.Pack(method, args...)
		if err != nil {
			return nil, err
		}
		out, _, err := evm.Call(uniDeployer, to, in, gas, new(uint256.Int))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		return out, nil
	}
	u := &Uniswap{Trader: uniTrader, Reserve: UniswapReserve, ABI: map[string]abi.ABI{"ERC20": erc20.ABI, "UniswapV2Pair": pair.ABI}}
	supply := new(big.Int).Exp(big.NewInt(10), big.NewInt(30), nil)
	if u.TokenA, err = create(erc20, supply); err != nil {
		return nil, fmt.Errorf("token A: %w", err)
	}
	if u.TokenB, err = create(erc20, supply); err != nil {
		return nil, fmt.Errorf("token B: %w", err)
	}
	if u.Factory, err = create(factory, uniDeployer); err != nil {
		return nil, fmt.Errorf("factory: %w", err)
	}
	out, err := call(factory.ABI, u.Factory, "createPair", u.TokenA, u.TokenB)
	if err != nil {
		return nil, err
	}
	u.Pair = common.BytesToAddress(out)
	u.Token0 = u.TokenA
	if u.TokenB.Cmp(u.TokenA) < 0 {
		u.Token0 = u.TokenB
	}
	for _, t := range []common.Address{u.TokenA, u.TokenB} {
		if _, err := call(erc20.ABI, t, "transfer", u.Pair, UniswapReserve); err != nil {
			return nil, err
		}
		if _, err := call(erc20.ABI, t, "transfer", uniTrader, TraderTokens); err != nil {
			return nil, err
		}
	}
	if _, err := call(pair.ABI, u.Pair, "mint", uniDeployer); err != nil {
		return nil, err
	}
	if (u.Pair == common.Address{}) {
		return nil, errors.New("createPair returned no pair")
	}
	u.alloc = types.GenesisAlloc{}
	for _, a := range []common.Address{uniDeployer, u.TokenA, u.TokenB, u.Factory, u.Pair} {
		acct := types.Account{Code: db.GetCode(a), Nonce: db.GetNonce(a), Balance: db.GetBalance(a).ToBig(), Storage: map[common.Hash]common.Hash{}}
		for slot, v := range storage[a] {
			if v != (common.Hash{}) {
				acct.Storage[slot] = v
			}
		}
		u.alloc[a] = acct
	}
	return u, nil
}

// Alloc are the deployed accounts, for a genesis.
func (u *Uniswap) Alloc() types.GenesisAlloc { return maps.Clone(u.alloc) }

// UniswapGenesis is the bench genesis with Uniswap V2 deployed (dir: the
// artifacts).
func UniswapGenesis(dir string) (*core.Genesis, *Uniswap, error) {
	g := BenchGenesis()
	u, err := DeployUniswap(dir, g)
	if err != nil {
		return nil, nil, err
	}
	maps.Copy(g.Alloc, u.Alloc())
	return g, u, nil
}
