// Command install installs the peers the differential tests in api/ compare
// with, geth v1.17.5 and op-geth (the module go.mod replaces go-ethereum
// with), into the shared cache (peers.DefaultCache), and prints their
// paths. scripts/test runs it from the repository root before the tests,
// so that they run outside CI too:
//
//	go run ./internal/peers/install geth op-geth
//
// A peer named by $PRECONF_GETH or $PRECONF_OPGETH is not installed: the
// tests use that one.
package main

import (
	"fmt"
	"os"

	"github.com/preconf/preconf/internal/peers"
)

func main() {
	cache := peers.DefaultCache()
	for _, name := range os.Args[1:] {
		var bin string
		var err error
		switch name {
		case "geth":
			bin = os.Getenv("PRECONF_GETH")
			if bin == "" {
				bin, err = peers.Geth(cache, true, os.Stderr)
			}
		case "op-geth":
			bin = os.Getenv("PRECONF_OPGETH")
			if bin == "" {
				bin, err = peers.OpGeth(".", cache, true, os.Stderr)
			}
		default:
			err = fmt.Errorf("unknown peer %q (geth, op-geth)", name)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "install:", err)
			os.Exit(1)
		}
		fmt.Println(bin)
	}
}
