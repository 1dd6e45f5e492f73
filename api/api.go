// Package api holds the eth_/net_/web3_ method handlers: each decodes its
// parameters, reads from the chain or the pending snapshot, and encodes the
// result exactly as go-ethereum does. Handlers keep no state of their own.
package api

import (
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

// Version is reported by web3_clientVersion; cmd/preconf sets it at build.
var Version = "preconf/v0.1.0"

// API serves reads of the sealed chain and the pending snapshot.
type API struct {
	chain   *chain.Chain
	pending *pending.Source
}

// New returns the API over a chain and (optionally) a pending source.
func New(c *chain.Chain, p *pending.Source) *API {
	return &API{chain: c, pending: p}
}

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
		"eth_getTransactionCount": a.getTransactionCount,
		"eth_getStorageValues":    a.getStorageValues,
	} {
		srv.Register(name, h)
	}
}
