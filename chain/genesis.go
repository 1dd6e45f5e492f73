package chain

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/forkrules"
)

// DevChainID is the chain id of the built-in dev chain (the same as anvil's
// and hardhat's default, so wallets configured for them work unchanged).
const DevChainID = 1337

// DevKeys are the private keys of the ten accounts derived from the standard
// test mnemonic "test test test test test test test test test test test junk"
// along m/44'/60'/0'/0/i. They are public knowledge; never use them for value.
var DevKeys = []string{
	"ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
	"59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
	"5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
	"7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
	"47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
	"8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
	"92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
	"4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
	"dbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
	"2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6",
}

// DevMnemonic and DevDerivationPath are where DevKeys come from (key i is
// DevDerivationPath + i), as anvil and hardhat print them.
const (
	DevMnemonic       = "test test test test test test test test test test test junk"
	DevDerivationPath = "m/44'/60'/0'/0/"
)

// DevAccounts returns the addresses of DevKeys, in order.
func DevAccounts() []common.Address {
	out := make([]common.Address, len(DevKeys))
	for i, k := range DevKeys {
		key, err := crypto.HexToECDSA(k)
		if err != nil {
			panic(fmt.Sprintf("bad built-in dev key %d: %v", i, err)) // a constant; cannot fail at run time
		}
		out[i] = crypto.PubkeyToAddress(key.PublicKey)
	}
	return out
}

// DevGenesis is the built-in dev chain: every fork through Osaka active at
// genesis, post-merge from block 0, the ten dev accounts funded with 10000 ETH,
// and the system contracts Prague and Osaka expect.
func DevGenesis() *core.Genesis {
	cfg := &params.ChainConfig{
		ChainID:                 big.NewInt(DevChainID),
		HomesteadBlock:          big.NewInt(0),
		EIP150Block:             big.NewInt(0),
		EIP155Block:             big.NewInt(0),
		EIP158Block:             big.NewInt(0),
		ByzantiumBlock:          big.NewInt(0),
		ConstantinopleBlock:     big.NewInt(0),
		PetersburgBlock:         big.NewInt(0),
		IstanbulBlock:           big.NewInt(0),
		MuirGlacierBlock:        big.NewInt(0),
		BerlinBlock:             big.NewInt(0),
		LondonBlock:             big.NewInt(0),
		ArrowGlacierBlock:       big.NewInt(0),
		GrayGlacierBlock:        big.NewInt(0),
		MergeNetsplitBlock:      big.NewInt(0),
		ShanghaiTime:            u64(0),
		CancunTime:              u64(0),
		PragueTime:              u64(0),
		OsakaTime:               u64(0),
		TerminalTotalDifficulty: big.NewInt(0),
		DepositContractAddress:  common.Address{},
		BlobScheduleConfig: &params.BlobScheduleConfig{
			Cancun: params.DefaultCancunBlobConfig,
			Prague: params.DefaultPragueBlobConfig,
			Osaka:  params.DefaultOsakaBlobConfig,
		},
	}
	eth := new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)
	funds := new(big.Int).Mul(big.NewInt(10000), eth)
	alloc := types.GenesisAlloc{
		params.BeaconRootsAddress:        {Nonce: 1, Code: params.BeaconRootsCode, Balance: common.Big0},
		params.HistoryStorageAddress:     {Nonce: 1, Code: params.HistoryStorageCode, Balance: common.Big0},
		params.WithdrawalQueueAddress:    {Nonce: 1, Code: params.WithdrawalQueueCode, Balance: common.Big0},
		params.ConsolidationQueueAddress: {Nonce: 1, Code: params.ConsolidationQueueCode, Balance: common.Big0},
	}
	for _, a := range DevAccounts() {
		alloc[a] = types.Account{Balance: new(big.Int).Set(funds)}
	}
	return &core.Genesis{
		Config:     cfg,
		Timestamp:  0,
		GasLimit:   150_000_000, // Base-sized blocks: room for thousands of transfers per second
		BaseFee:    big.NewInt(params.InitialBaseFee),
		Difficulty: big.NewInt(0),
		Alloc:      alloc,
		ExtraData:  []byte{},
	}
}

// LoadGenesis reads a go-ethereum genesis JSON file.
func LoadGenesis(path string) (*core.Genesis, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read genesis: %w", err)
	}
	g := new(core.Genesis)
	if err := json.Unmarshal(raw, g); err != nil {
		return nil, fmt.Errorf("genesis %s: %w", path, err)
	}
	if g.Config == nil {
		return nil, fmt.Errorf("genesis %s: missing \"config\"", path)
	}
	if g.Config.ChainID == nil {
		return nil, fmt.Errorf("genesis %s: missing config.chainId", path)
	}
	if err := g.Config.CheckConfigForkOrder(); err != nil {
		return nil, fmt.Errorf("genesis %s: %w", path, err)
	}
	if g.Config, err = forkrules.Normalize(g.Config); err != nil {
		return nil, fmt.Errorf("genesis %s: %w", path, err)
	}
	if err := forkrules.Check(g.Config, g.Timestamp); err != nil {
		return nil, fmt.Errorf("genesis %s: %w", path, err)
	}
	return g, nil
}

func u64(v uint64) *uint64 { return &v }
