package node

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/preconf/preconf/rpc"
)

// PublicAPIs are the namespaces served by default on an address other
// machines can reach (Config.APIs nil), as geth's --http.api default: no
// wallet, no dev methods, no tracing, no transaction pool.
var PublicAPIs = []string{"eth", "net", "web3"}

// apiGroups are namespaces served together: anvil's dev methods answer
// under three prefixes, and naming one names all three.
var apiGroups = [][]string{{"anvil", "evm", "hardhat"}}

// exposedAPIs is the namespace filter the configuration asks for (nil:
// every namespace the node registers): Config.APIs when set ("*" or "all":
// every one), else every one on a loopback-only address (the default,
// 127.0.0.1) and PublicAPIs elsewhere. Names are case-insensitive; a group
// member (apiGroups) brings its group.
func (c *Config) exposedAPIs() ([]string, error) {
	list := c.APIs
	if list == nil {
		if rpc.LoopbackHosts.Allows(cmp.Or(c.HTTPAddr, "127.0.0.1")) {
			return nil, nil
		}
		list = PublicAPIs
	}
	var out []string
	for _, ns := range list {
		ns = strings.ToLower(strings.TrimSpace(ns))
		switch ns {
		case "":
			continue
		case "*", "all":
			return nil, nil
		}
		out = append(out, ns)
		for _, g := range apiGroups {
			if slices.Contains(g, ns) {
				out = append(out, g...)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--http.api: no API namespace given")
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// checkAPIs refuses a namespace filter that names a namespace the node
// registered no method under: the namespaces served are the ones
// registered. (Follow mode forwards what it does not serve itself to its
// upstream, which decides; it has no such check.)
func (n *Node) checkAPIs() error {
	want, err := n.cfg.exposedAPIs()
	if err != nil || want == nil {
		return err
	}
	have := n.RPC.Namespaces()
	for _, ns := range want {
		if !slices.Contains(have, ns) {
			return fmt.Errorf("--http.api: unknown API namespace %q (this node has %s)", ns, strings.Join(have, ", "))
		}
	}
	return nil
}
