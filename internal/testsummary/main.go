// Command testsummary reads `go test -json` on its standard input and
// prints what a plain `go test` prints (each package's result, the whole
// output of a failed test), writes every test's output as text to the log
// file named by its argument, and ends with one line that names each
// skipped test with its reason (which says how to run it): scripts/test
// pipes the suite through it so that no test is skipped unseen. It exits 1
// when a test, a package or a build failed.
//
//	go test -json ./... | go run ./internal/testsummary LOG
package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go test -json ./... | testsummary LOG")
		os.Exit(2)
	}
	log, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	s := newSummary(os.Stdout, log)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	for in.Scan() {
		s.line(in.Bytes())
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stdout, "testsummary: reading go test's output:", err)
		s.failed = true
	}
	s.end()
	if err := log.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if s.failed {
		os.Exit(1)
	}
}
