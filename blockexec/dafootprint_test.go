package blockexec_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/blockexec"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/pending"
)

// TestDAFootprint: on the OP dev chain from Jovian on, the footprint kept as
// transactions are applied equals types.CalcDAFootprint of the block's
// transactions after each one, and DAFits refuses the first transfer that
// would take it over the gas limit while the gas pool still has room (a
// transfer's footprint, 400 times its estimated size, is above its 21,000
// gas). Before Jovian there is none and everything fits.
func TestDAFootprint(t *testing.T) {
	for _, c := range []struct {
		fork   forkrules.Fork
		jovian bool
	}{{forkrules.Isthmus, false}, {forkrules.Jovian, true}, {forkrules.Karst, true}} {
		t.Run(c.fork.String(), func(t *testing.T) {
			g, err := chain.DevL2GenesisAt(c.fork)
			if err != nil {
				t.Fatal(err)
			}
			ch, err := chain.Open(chain.Config{Genesis: g})
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Close()
			cfg, parent := ch.Config(), ch.Head()
			time := parent.Time + 2
			var minBaseFee *uint64
			if cfg.IsJovian(time) {
				minBaseFee = new(uint64)
			}
			const gasLimit = 3_000_000
			header := pending.NewHeader(cfg, parent, pending.Env{
				Coinbase: common.Address{0xc0}, GasLimit: gasLimit, Time: time, Random: common.Hash{1}, BeaconRoot: parent.Hash(),
				Extra: eip1559.EncodeOptimismExtraData(cfg, time, cfg.BaseFeeChangeDenominator(time), cfg.ElasticityMultiplier(), minBaseFee),
			})
			statedb, err := ch.StateAt(parent)
			if err != nil {
				t.Fatal(err)
			}
			b, err := blockexec.Open(cfg, ch.ChainContext(), parent, header, statedb)
			if err != nil {
				t.Fatal(err)
			}
			signer := types.LatestSigner(cfg)
			apply := func(tx *types.Transaction) error {
				msg, err := core.TransactionToMessage(tx, signer, header.BaseFee)
				if err != nil {
					return err
				}
				_, err = b.Apply(tx, msg)
				return err
			}
			applyL1Deposit(t, ch, cfg, parent, time, 0, apply)
			key, _ := crypto.HexToECDSA(chain.DevKeys[1])
			nonce := statedb.GetNonce(crypto.PubkeyToAddress(key.PublicKey))
			for i := uint64(0); ; i++ {
				to := common.Address{0x20, byte(i)}
				tx := signTx(t, key, signer, &types.DynamicFeeTx{ChainID: cfg.ChainID, Nonce: nonce + i, GasTipCap: big.NewInt(1),
					GasFeeCap: big.NewInt(100 * params.GWei), Gas: params.TxGas, To: &to, Value: big.NewInt(1)})
				da, err := b.DAFootprint()
				if err != nil {
					t.Fatal(err)
				}
				if !c.jovian {
					if da != nil || !b.DAFits(tx) {
						t.Fatalf("before Jovian: footprint %v, fits %v", da, b.DAFits(tx))
					}
					if b.Gas.Gas() < params.TxGas {
						return
					}
				} else {
					if want, err := types.CalcDAFootprint(b.Txs); err != nil || *da != want {
						t.Fatalf("after %d transfers: footprint %d, op-geth's %d (%v)", i, *da, want, err)
					}
					if !b.DAFits(tx) {
						if b.Gas.Gas() < params.TxGas || i == 0 {
							t.Fatalf("the gas pool (%d left) bound before the DA footprint (%d) did, after %d transfers", b.Gas.Gas(), *da, i)
						}
						next := tx.RollupCostData().EstimatedDASize().Uint64() * 400
						if *da+next <= gasLimit {
							t.Fatalf("refused at footprint %d + %d within the limit", *da, next)
						}
						return
					}
				}
				if err := apply(tx); err != nil {
					t.Fatalf("transfer %d: %v", i, err)
				}
			}
		})
	}
}
