// Package anvil serves the dev chain's anvil methods (anvil_*, evm_* and
// the hardhat_* aliases anvil has) over JSON-RPC, with anvil 1.7.1's
// names, parameters, results and error codes. Each method is a call of the
// sequencer's Go API: cheats change the open block (visible at pending at
// once, logged, sealed with it), settings and snapshots are logged by the
// sequencer too.
package anvil

import (
	"context"
	"crypto/rand"
	"math/big"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"

	"github.com/preconf/preconf/fork"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/seqapi"
	"github.com/preconf/preconf/sequencer"
)

// Options are what the info methods report.
type Options struct {
	// Version is the client version (web3_clientVersion's).
	Version string
	// Fork is the forked chain, nil on a local chain.
	Fork *fork.Chain
	// GasPrice answers eth_gasPrice (anvil_nodeInfo's environment).
	GasPrice func(ctx context.Context) (*big.Int, error)
}

// API serves the methods.
type API struct {
	s    *sequencer.Sequencer
	opts Options
	// instance is anvil_metadata's instanceId: random, a new one after
	// every anvil_reset (as anvil's), so a client can tell a reset node.
	instance atomic.Pointer[common.Hash]
}

func (a *API) newInstance() {
	var h common.Hash
	_, _ = rand.Read(h[:])
	a.instance.Store(&h)
}

// Register adds the methods to srv, each under anvil's name and the aliases
// anvil 1.7.1 answers to.
func Register(srv *rpc.Server, s *sequencer.Sequencer, opts Options) {
	a := &API{s: s, opts: opts}
	a.newInstance()
	for _, m := range a.methods() {
		for _, name := range m.names {
			srv.Register(name, m.h)
		}
	}
}

// RegisterDisabled answers every method with seqapi.ErrNoSequencer on a
// node without a sequencer (--no-sequencer): there is no open block to
// change.
func RegisterDisabled(srv *rpc.Server) {
	refuse := func(context.Context, rpc.Params) (any, error) { return nil, seqapi.ErrNoSequencer }
	for _, m := range (&API{}).methods() {
		for _, name := range m.names {
			srv.Register(name, refuse)
		}
	}
}

type method struct {
	names []string
	h     rpc.Handler
}

// methods lists every method with its names; the hardhat_ aliases are the
// ones anvil 1.7.1 answers (hardhat_setBlockGasLimit, hardhat_snapshot and
// the time methods are not among them).
func (a *API) methods() []method {
	return []method{
		{[]string{"anvil_setBalance", "hardhat_setBalance"}, a.setBalance},
		{[]string{"anvil_addBalance", "hardhat_addBalance"}, a.addBalance},
		{[]string{"anvil_setCode", "hardhat_setCode"}, a.setCode},
		{[]string{"anvil_setNonce", "hardhat_setNonce", "evm_setAccountNonce"}, a.setNonce},
		{[]string{"anvil_setStorageAt", "hardhat_setStorageAt"}, a.setStorageAt},
		{[]string{"anvil_dealERC20", "hardhat_dealERC20"}, a.dealERC20},
		{[]string{"anvil_setCoinbase", "hardhat_setCoinbase"}, a.setCoinbase},
		{[]string{"anvil_setNextBlockBaseFeePerGas", "hardhat_setNextBlockBaseFeePerGas"}, a.setNextBaseFee},
		{[]string{"anvil_setBlockGasLimit", "evm_setBlockGasLimit"}, a.setBlockGasLimit},
		{[]string{"anvil_impersonateAccount", "hardhat_impersonateAccount"}, a.impersonate(true)},
		{[]string{"anvil_stopImpersonatingAccount", "hardhat_stopImpersonatingAccount"}, a.impersonate(false)},
		{[]string{"anvil_autoImpersonateAccount", "hardhat_autoImpersonateAccount"}, a.autoImpersonate},
		{[]string{"evm_increaseTime", "anvil_increaseTime"}, a.increaseTime},
		{[]string{"evm_setNextBlockTimestamp", "anvil_setNextBlockTimestamp"}, a.setNextBlockTimestamp},
		{[]string{"evm_setTime", "anvil_setTime"}, a.setTime},
		{[]string{"anvil_setBlockTimestampInterval"}, a.setTimestampInterval},
		{[]string{"anvil_removeBlockTimestampInterval"}, a.removeTimestampInterval},
		{[]string{"evm_mine"}, a.evmMine},
		{[]string{"anvil_mine", "hardhat_mine"}, a.anvilMine},
		{[]string{"evm_setAutomine", "anvil_setAutomine"}, a.setAutomine},
		{[]string{"anvil_getAutomine", "hardhat_getAutomine"}, a.getAutomine},
		{[]string{"anvil_setIntervalMining", "evm_setIntervalMining"}, a.setIntervalMining},
		{[]string{"anvil_getIntervalMining"}, a.getIntervalMining},
		{[]string{"evm_snapshot", "anvil_snapshot"}, a.snapshot},
		{[]string{"evm_revert", "anvil_revert"}, a.revert},
		{[]string{"anvil_reset", "hardhat_reset"}, a.reset},
		{[]string{"anvil_dropTransaction", "hardhat_dropTransaction"}, a.dropTransaction},
		{[]string{"anvil_dropAllTransactions", "hardhat_dropAllTransactions"}, a.dropAllTransactions},
		{[]string{"anvil_dumpState", "hardhat_dumpState"}, a.dumpState},
		{[]string{"anvil_loadState", "hardhat_loadState"}, a.loadState},
		{[]string{"anvil_nodeInfo"}, a.nodeInfo},
		{[]string{"anvil_metadata", "hardhat_metadata"}, a.metadata},
	}
}

// coded turns the sequencer's errors into anvil's codes: a refusal of the
// input is -32602, anything else -32603.
func coded(err error) error { return seqapi.Coded(err, rpc.CodeInternal) }
