package wallet

import (
	"math/big"
	"slices"
)

// Chain is one network the wallet knows, in EIP-3085's shape. ChainID is
// canonical: lower-case 0x-hex without leading zeros.
type Chain struct {
	ChainID           string   `json:"chainId"`
	ChainName         string   `json:"chainName"`
	NativeCurrency    Currency `json:"nativeCurrency"`
	RPCURLs           []string `json:"rpcUrls"`
	BlockExplorerURLs []string `json:"blockExplorerUrls,omitempty"`
	IconURLs          []string `json:"iconUrls,omitempty"`
}

// Currency is a chain's native currency.
type Currency struct {
	Name     string `json:"name"`
	Symbol   string `json:"symbol"`
	Decimals int    `json:"decimals"`
}

// ID returns the chain id as a number.
func (c Chain) ID() *big.Int {
	n, _ := new(big.Int).SetString(c.ChainID[min(2, len(c.ChainID)):], 16)
	return n
}

// Equal reports whether two entries are the same in every field.
func (c Chain) Equal(o Chain) bool {
	return c.ChainID == o.ChainID && c.ChainName == o.ChainName && c.NativeCurrency == o.NativeCurrency &&
		slices.Equal(c.RPCURLs, o.RPCURLs) && slices.Equal(c.BlockExplorerURLs, o.BlockExplorerURLs) &&
		slices.Equal(c.IconURLs, o.IconURLs)
}

// clone returns a deep copy (the slices are not shared).
func (c Chain) clone() Chain {
	c.RPCURLs = slices.Clone(c.RPCURLs)
	c.BlockExplorerURLs = slices.Clone(c.BlockExplorerURLs)
	c.IconURLs = slices.Clone(c.IconURLs)
	return c
}

// merge is what the registry holds after an approved request for a chain it
// already knows: the request's name and currency, and the request's URLs that
// are new placed before the known ones (a newly approved RPC URL becomes the
// default, as in MetaMask); nothing already known is dropped, so a request
// that repeats (part of) an entry changes nothing.
func merge(old, req Chain) Chain {
	out := req.clone()
	out.RPCURLs = unionNewFirst(old.RPCURLs, req.RPCURLs)
	out.BlockExplorerURLs = unionNewFirst(old.BlockExplorerURLs, req.BlockExplorerURLs)
	out.IconURLs = unionNewFirst(old.IconURLs, req.IconURLs)
	return out
}

// unionNewFirst returns the entries of add that old lacks, then old.
func unionNewFirst(old, add []string) []string {
	var out []string
	for _, u := range add {
		if !slices.Contains(old, u) && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	out = append(out, old...)
	if len(out) > maxListLen { // keep the newest: the oldest known URLs go first
		out = out[:maxListLen]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
