// Command seedpool prepares a node for a replay of the execution-apis
// fixtures with rpc-compat: it sends the transactions that the recorded
// txpool_content answer holds and no fixture of the directory sends (see
// conformance.SeedPool). Run it after the node starts, before rpc-compat:
//
//	go run ./conformance/seedpool --url http://127.0.0.1:8545 ../shared/conformance/execution-apis
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/preconf/preconf/conformance"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8545", "the node's JSON-RPC URL")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: seedpool [--url URL] FIXTURE_DIR (the directory holding tests/ and chain.rlp)")
		os.Exit(2)
	}
	n, err := conformance.SeedPool(conformance.NewClient(), *url, flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "seedpool:", err)
		os.Exit(1)
	}
	fmt.Printf("seedpool: sent %d recorded pool transaction(s) no fixture sends\n", n)
}
