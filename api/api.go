// Package api holds the eth_/net_/web3_ method handlers: each decodes its
// parameters, reads from the chain or the pending snapshot, and encodes the
// result exactly as go-ethereum does. Handlers keep no state of their own.
package api

import (
	"errors"
	"sync/atomic"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/internal/option"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/simulate"
)

// Version is reported by web3_clientVersion; cmd/preconf sets it at build.
var Version = "preconf/v0.1.0"

// API serves reads of the sealed chain and the pending snapshot.
type API struct {
	chain       Backend
	pending     *pending.Source
	cache       readCache                 // memoised signer and tip suggestion (api/fees.go)
	readers     readerCache               // the last state reader opened (api/blockref.go)
	hashes      hashCache                 // hashes of the last headers compared (api/blockref.go)
	head        atomic.Pointer[headEntry] // the head block's view (api/blocks.go)
	snapReaders snapshotReaders           // read cache of the current pending snapshot (api/readcache.go)
	engine      *simulate.Engine          // eth_call & co. (api/call.go)
	logLimits   LogLimits                 // eth_getLogs caps (api/logs.go)
	op          bool                      // an OP-stack chain: op-geth's transaction and receipt fields
	callDefault ethjson.BlockRef          // eth_call's block when omitted (api/defaults.go)
	poolNonces  PoolNonces                // pool nonces at "pending" (api/nonce.go)
}

// Config configures the method handlers. Zero values are the defaults;
// Validate checks it.
type Config struct {
	// Pending is the pre-confirmed state read at "pending" (nil: none,
	// "pending" reads "latest").
	Pending *pending.Source
	// Simulate limits eth_call, eth_estimateGas, eth_createAccessList and
	// eth_simulateV1 and sets their state-root mode (nil, like the zero
	// Options: simulate's defaults).
	Simulate *simulate.Options
	// CallDefault is eth_call's block when a request omits it: ethjson.Latest
	// (also the zero value) or "pending" (ParseCallDefault, the
	// --rpc.call-default flag). eth_estimateGas and eth_createAccessList
	// always default to pending (defaults.go).
	CallDefault ethjson.BlockRef
	// LogLimits cap one eth_getLogs query (nil, like zero fields:
	// DefaultLogMaxRange and DefaultLogMaxResults).
	LogLimits *LogLimits
	// PoolNonces, when set, makes eth_getTransactionCount at "pending"
	// answer the pool nonce, as go-ethereum does, so that transactions sent
	// back to back get consecutive nonces while they wait in the pool for
	// the next flashblock (nonce.go).
	PoolNonces PoolNonces
}

// Validate checks the configuration; errors are option.FieldErrors naming
// "call-default", "getlogs-max-results" or, for Simulate's,
// "simulate."+its option.
func (c *Config) Validate() error {
	if d := c.CallDefault; d != (ethjson.BlockRef{}) && d != ethjson.Latest && d != pendingRef {
		return option.Errorf("call-default", "must be latest or pending")
	}
	if c.LogLimits != nil && c.LogLimits.MaxResults < 0 {
		return option.Errorf("getlogs-max-results", "must not be negative")
	}
	if c.Simulate != nil {
		var fe *option.FieldError
		if err := c.Simulate.Validate(); errors.As(err, &fe) {
			return &option.FieldError{Field: "simulate." + fe.Field, Msg: fe.Msg}
		} else if err != nil {
			return err
		}
	}
	return nil
}

// New returns the API over the sealed chain b, or Validate's error.
func New(b Backend, cfg Config) (*API, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &API{chain: b, pending: cfg.Pending, op: b.Config().Optimism != nil, poolNonces: cfg.PoolNonces,
		callDefault: ethjson.Latest}
	if cfg.CallDefault != (ethjson.BlockRef{}) {
		a.callDefault = cfg.CallDefault
	}
	if cfg.LogLimits != nil {
		a.logLimits = *cfg.LogLimits
	}
	a.logLimits = a.logLimits.withDefaults()
	var opts simulate.Options
	if cfg.Simulate != nil {
		opts = *cfg.Simulate
	}
	if err := a.setSimulateOptions(opts); err != nil {
		return nil, err
	}
	return a, nil
}

// Local is the sealed-chain backend of a local chain.
func Local(c *chain.Chain) Backend { return localChain{c} }

// Register adds every method of this package to srv.
func (a *API) Register(srv *rpc.Server) {
	for name, h := range map[string]rpc.Handler{
		"eth_chainId":             a.chainID,
		"net_version":             a.netVersion,
		"net_listening":           a.netListening,
		"net_peerCount":           a.netPeerCount,
		"web3_clientVersion":      a.clientVersion,
		"web3_sha3":               a.sha3,
		"eth_blockNumber":         a.blockNumber,
		"eth_syncing":             a.syncing,
		"eth_getBalance":          a.getBalance,
		"eth_getStorageAt":        a.getStorageAt,
		"eth_getCode":             a.getCode,
		"eth_getAccountInfo":      a.getAccountInfo,
		"eth_getTransactionCount": a.getTransactionCount,
		"eth_getStorageValues":    a.getStorageValues,

		"eth_getHeaderByNumber":                      a.headerHandler(numberParam),
		"eth_getHeaderByHash":                        a.headerHandler(hashParam),
		"eth_getUncleByBlockNumberAndIndex":          a.uncleHandler(numberParam),
		"eth_getUncleByBlockHashAndIndex":            a.uncleHandler(hashParam),
		"eth_getRawTransactionByHash":                a.debugGetRawTransaction,
		"eth_getRawTransactionByBlockNumberAndIndex": a.rawTxByIndex(numberParam),
		"eth_getRawTransactionByBlockHashAndIndex":   a.rawTxByIndex(hashParam),

		"eth_getBlockByNumber":                    a.getBlockByNumber,
		"eth_getBlockByHash":                      a.getBlockByHash,
		"eth_getBlockTransactionCountByNumber":    a.countHandler(numberParam, txCount),
		"eth_getBlockTransactionCountByHash":      a.countHandler(hashParam, txCount),
		"eth_getUncleCountByBlockNumber":          a.countHandler(numberParam, uncleCount),
		"eth_getUncleCountByBlockHash":            a.countHandler(hashParam, uncleCount),
		"eth_getTransactionByHash":                a.getTransactionByHash,
		"eth_getTransactionByBlockNumberAndIndex": a.txByIndex(numberParam),
		"eth_getTransactionByBlockHashAndIndex":   a.txByIndex(hashParam),
		"eth_getTransactionReceipt":               a.getTransactionReceipt,
		"eth_getBlockReceipts":                    a.getBlockReceipts,
		"eth_getLogs":                             a.getLogs,
		"eth_gasPrice":                            a.gasPrice,
		"eth_maxPriorityFeePerGas":                a.maxPriorityFeePerGas,
		"eth_feeHistory":                          a.feeHistory,
		"eth_blobBaseFee":                         a.blobBaseFee,
		"eth_baseFee":                             a.baseFee,
		"eth_getProof":                            a.getProof,
		"eth_config":                              a.config,
		"debug_getRawHeader":                      a.rawEncoder("header #%d not found", rawHeader),
		"debug_getRawBlock":                       a.rawEncoder("block #%d not found", rawBody),
		"debug_getRawReceipts":                    a.debugGetRawReceipts,
		"debug_getRawTransaction":                 a.debugGetRawTransaction,
		"eth_call":                                a.ethCall,
		"eth_estimateGas":                         a.estimateGas,
		"eth_createAccessList":                    a.createAccessList,
		"eth_simulateV1":                          a.simulateV1,
		"eth_capabilities":                        a.capabilities,
		"debug_traceTransaction":                  a.debugTraceTransaction,
		"debug_traceBlockByNumber":                a.debugTraceBlockByNumber,
		"debug_traceBlockByHash":                  a.debugTraceBlockByHash,
		"debug_traceCall":                         a.debugTraceCall,
	} {
		srv.Register(name, h)
	}
}
