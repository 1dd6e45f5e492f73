package anvil

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"runtime/debug"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/sequencer"
)

// snapshot: [] → the snapshot id as a hex quantity.
func (a *API) snapshot(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 0, 0); err != nil {
		return nil, err
	}
	id, err := a.s.Snapshot(ctx)
	if err != nil {
		return nil, coded(err)
	}
	return hexutil.Uint64(id), nil
}

// revert: [id] → whether id was a live snapshot (it and later ones are
// gone after it).
func (a *API) revert(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 0); err != nil {
		return nil, err
	}
	id, err := number(p, 0)
	if err != nil {
		return nil, err
	}
	if !id.IsUint64() {
		return false, nil
	}
	ok, err := a.s.Revert(ctx, id.Uint64())
	if err != nil {
		return nil, coded(err)
	}
	return ok, nil
}

// resetParams is anvil_reset's optional parameter.
type resetParams struct {
	Forking *struct {
		JSONRPCURL  *string          `json:"jsonRpcUrl"`
		BlockNumber *json.RawMessage `json:"blockNumber"`
	} `json:"forking"`
}

// reset: [] or [{forking: {jsonRpcUrl, blockNumber}}] → null. Without
// forking parameters a local chain goes back to genesis and a fork to its
// fork block; with them a fork forks again (a local chain refuses them, as
// anvil does without --fork-url).
func (a *API) reset(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 1); err != nil {
		return nil, err
	}
	var opts struct {
		url   string
		block *uint64
		fork  bool
	}
	if p.Present(0) {
		var rp resetParams
		if err := p.Required(0, &rp); err != nil {
			return nil, err
		}
		opts.fork = true
		if f := rp.Forking; f != nil {
			if f.JSONRPCURL != nil {
				opts.url = *f.JSONRPCURL
			}
			if f.BlockNumber != nil && string(*f.BlockNumber) != "null" {
				v, err := parseNumber(*f.BlockNumber)
				if err != nil || !v.IsUint64() {
					return nil, rpc.InvalidParams("invalid forking.blockNumber %s", *f.BlockNumber)
				}
				n := v.Uint64()
				opts.block = &n
			}
		}
		if a.opts.Fork == nil && opts.url == "" {
			return nil, rpc.InvalidParams("Forking not enabled and RPC URL not provided to start forking")
		}
		if a.opts.Fork == nil {
			return nil, rpc.InvalidParams("this node is not a fork: anvil_reset cannot start forking (restart with --fork-url %s)", opts.url)
		}
	}
	if err := a.s.Reset(ctx, sequencer.ResetOptions{URL: opts.url, Block: opts.block, Fork: opts.fork}); err != nil {
		return nil, coded(err)
	}
	a.newInstance()
	return nil, nil
}

// dropTransaction: [hash] → null (also for a hash not in the pool).
func (a *API) dropTransaction(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 0); err != nil {
		return nil, err
	}
	h, err := hash(p, 0)
	if err != nil {
		return nil, err
	}
	_, err = a.s.DropTransactions(ctx, []common.Hash{h})
	return nil, coded(err)
}

// dropAllTransactions: [] → null.
func (a *API) dropAllTransactions(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 0, 0); err != nil {
		return nil, err
	}
	_, err := a.s.DropTransactions(ctx, nil)
	return nil, coded(err)
}

// nodeInfo is anvil_nodeInfo's answer.
type nodeInfo struct {
	CurrentBlockNumber    hexutil.Uint64 `json:"currentBlockNumber"`
	CurrentBlockTimestamp uint64         `json:"currentBlockTimestamp"`
	CurrentBlockHash      common.Hash    `json:"currentBlockHash"`
	HardFork              string         `json:"hardFork"`
	TransactionOrder      string         `json:"transactionOrder"`
	Environment           struct {
		BaseFee  *hexutil.Big   `json:"baseFee"`
		ChainID  uint64         `json:"chainId"`
		GasLimit hexutil.Uint64 `json:"gasLimit"`
		GasPrice *hexutil.Big   `json:"gasPrice"`
	} `json:"environment"`
	ForkConfig struct {
		ForkURL          *string `json:"forkUrl"`
		ForkBlockNumber  *uint64 `json:"forkBlockNumber"`
		ForkRetryBackoff *uint64 `json:"forkRetryBackoff"`
	} `json:"forkConfig"`
}

// nodeInfo: [] → the latest block, the chain's rules and environment, and
// the fork, as anvil_nodeInfo.
func (a *API) nodeInfo(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 0, 0); err != nil {
		return nil, err
	}
	c := a.s.Chain()
	head, config := c.Head(), c.Config()
	var out nodeInfo
	out.CurrentBlockNumber = hexutil.Uint64(head.Number.Uint64())
	out.CurrentBlockTimestamp = head.Time
	out.CurrentBlockHash = head.Hash()
	out.HardFork = hardFork(config.LatestFork(head.Time).String())
	out.TransactionOrder = "fees"
	pending := a.s.Source().Current().Header
	if pending.BaseFee != nil {
		out.Environment.BaseFee = (*hexutil.Big)(pending.BaseFee)
	}
	out.Environment.ChainID = config.ChainID.Uint64()
	out.Environment.GasLimit = hexutil.Uint64(pending.GasLimit)
	if a.opts.GasPrice != nil {
		price, err := a.opts.GasPrice(ctx)
		if err != nil {
			return nil, coded(err)
		}
		out.Environment.GasPrice = (*hexutil.Big)(price)
	} else {
		out.Environment.GasPrice = (*hexutil.Big)(new(big.Int))
	}
	if f := a.opts.Fork; f != nil {
		url := f.Upstream().URL()
		n := f.ForkBlock().Number.Uint64()
		out.ForkConfig.ForkURL, out.ForkConfig.ForkBlockNumber = &url, &n
	}
	return &out, nil
}

// hardFork names a fork as anvil does: the first letter upper case.
func hardFork(name string) string {
	if name == "" {
		return name
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

// forkedNetwork is anvil_metadata's fork.
type forkedNetwork struct {
	ChainID         uint64      `json:"chainId"`
	ForkBlockNumber uint64      `json:"forkBlockNumber"`
	ForkBlockHash   common.Hash `json:"forkBlockHash"`
}

// metadata is anvil_metadata's answer (hardhat_metadata's fields too).
type metadata struct {
	ClientVersion     string            `json:"clientVersion"`
	ClientSemver      string            `json:"clientSemver"`
	ClientCommitSha   string            `json:"clientCommitSha"`
	ChainID           uint64            `json:"chainId"`
	InstanceID        common.Hash       `json:"instanceId"`
	LatestBlockNumber uint64            `json:"latestBlockNumber"`
	LatestBlockHash   common.Hash       `json:"latestBlockHash"`
	ForkedNetwork     *forkedNetwork    `json:"forkedNetwork"`
	Snapshots         map[string][2]any `json:"snapshots"`
}

// metadata: [] → the client, the chain, the latest block, the fork and
// the live snapshots ({id: [block number, block hash]}).
func (a *API) metadata(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 0, 0); err != nil {
		return nil, err
	}
	c := a.s.Chain()
	head, config := c.Head(), c.Config()
	out := &metadata{
		ClientVersion: a.opts.Version, ClientSemver: semver(a.opts.Version), ClientCommitSha: commit(), ChainID: config.ChainID.Uint64(), InstanceID: *a.instance.Load(),
		LatestBlockNumber: head.Number.Uint64(), LatestBlockHash: head.Hash(), Snapshots: map[string][2]any{},
	}
	if f := a.opts.Fork; f != nil {
		point := f.ForkBlock()
		out.ForkedNetwork = &forkedNetwork{ChainID: config.ChainID.Uint64(), ForkBlockNumber: point.Number.Uint64(), ForkBlockHash: point.Hash()}
	}
	for _, s := range a.s.Snapshots() {
		out.Snapshots[fmt.Sprintf("%#x", s.ID)] = [2]any{s.Number, s.Hash}
	}
	return out, nil
}

// semver is the version number of a client version ("preconf/v0.1.0" →
// "0.1.0").
func semver(version string) string {
	_, v, _ := strings.Cut(version, "/")
	return strings.TrimPrefix(v, "v")
}

// commit is the VCS revision the binary was built from ("" when unknown).
func commit() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}
