package api

import (
	"fmt"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/rpc"
)

// The block of an execution method whose request omits it.
//
// eth_estimateGas and eth_createAccessList run at "pending": they prepare a
// transaction about to be sent, which will execute on top of the
// pre-confirmed state. At "latest" a contract deployed or a balance received
// a few hundred milliseconds ago would not count yet: a call into a contract
// whose deployment is pre-confirmed but not sealed would be estimated as a
// call into an empty account (21000 gas and a little), and the transaction
// sent with that limit would run out of gas. Clients (viem, ethers, web3.js,
// cast) send eth_estimateGas without a block.
//
// eth_call keeps "latest", the spec's default, unless the operator chooses
// "pending" (Config.CallDefault, the --rpc.call-default flag).

// pendingRef is the "pending" selector.
var pendingRef = ethjson.BlockRef{Tag: ethjson.TagPending}

// ParseCallDefault reads the value of --rpc.call-default.
func ParseCallDefault(s string) (ethjson.BlockRef, error) {
	switch s {
	case "latest":
		return ethjson.Latest, nil
	case "pending":
		return pendingRef, nil
	}
	return ethjson.BlockRef{}, fmt.Errorf("bad call default %q: want latest or pending", s)
}

// DefaultsToPending reports whether a request of method omits its block and
// runs at "pending" for that reason. A follower answers such requests itself
// instead of forwarding them to its upstream, whose "latest" lacks the
// pre-confirmed state.
func (a *API) DefaultsToPending(method string, p rpc.Params) bool {
	var def ethjson.BlockRef
	switch method {
	case "eth_estimateGas", "eth_createAccessList":
		def = pendingRef
	case "eth_call":
		def = a.callDefault
	default:
		return false
	}
	return def.Tag == ethjson.TagPending && !p.Present(1)
}
