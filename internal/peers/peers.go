// Package peers finds, and installs when asked, the external programs that
// the tests and the benchmark drive: go-ethereum's geth, op-geth's geth and
// foundry's anvil as peers (in a cache shared by `go run ./bench` and the
// tests), and the Node.js that runs the JavaScript client tests.
package peers

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gofrs/flock"
)

// Pinned peers.
const (
	GethModule   = "github.com/ethereum/go-ethereum/cmd/geth@v1.17.5"
	AnvilPackage = "@foundry-rs/anvil-linux-amd64"
)

// DefaultCache is where installed peers are kept: ~/.cache/preconf-bench.
func DefaultCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "preconf-bench")
	}
	return filepath.Join(".bench", "cache")
}

// Geth returns cache/bin/geth. When it is missing and install is set, it
// builds it first with `go install` (several minutes on two cores), logging
// what it does to log; otherwise a missing binary is an error.
func Geth(cache string, install bool, log io.Writer) (string, error) {
	gobin := filepath.Join(cache, "bin")
	bin := filepath.Join(gobin, "geth")
	return installOnce(cache, bin, install, func() error {
		fmt.Fprintf(log, "installing geth: GOBIN=%s go install %s (takes several minutes)\n", gobin, GethModule)
		cmd := exec.Command("go", "install", GethModule)
		cmd.Dir = cache // outside any module: go install pkg@version
		cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go install %s: %v\n%s", GethModule, err, out)
		}
		return nil
	})
}

// Anvil returns anvil from the npm package in cache/npm, installing it with
// npm first when it is missing and install is set.
func Anvil(cache string, install bool, log io.Writer) (string, error) {
	prefix := filepath.Join(cache, "npm")
	bin := filepath.Join(prefix, "node_modules", AnvilPackage, "bin", "anvil")
	return installOnce(cache, bin, install, func() error {
		if _, err := exec.LookPath("npm"); err != nil {
			return errors.New("anvil: npm not found (install nodejs and npm)")
		}
		fmt.Fprintf(log, "installing anvil: npm install --prefix %s %s\n", prefix, AnvilPackage)
		cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--prefix", prefix, AnvilPackage)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("npm install %s: %v\n%s", AnvilPackage, err, out)
		}
		return nil
	})
}

// installOnce returns bin, running do first when bin is missing and install
// is set. A lock file in cache keeps two processes (two test binaries, or a
// test and the benchmark) from installing into it at once.
func installOnce(cache, bin string, install bool, do func() error) (string, error) {
	if IsExecutable(bin) {
		return bin, nil
	}
	name := filepath.Base(bin)
	if !install {
		return "", fmt.Errorf("%s not installed at %s", name, bin)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	lock := flock.New(filepath.Join(cache, "install.lock"))
	if err := lock.Lock(); err != nil {
		return "", fmt.Errorf("lock %s: %w", cache, err)
	}
	defer lock.Unlock()
	if IsExecutable(bin) { // installed while we waited
		return bin, nil
	}
	if err := do(); err != nil {
		return "", err
	}
	if !IsExecutable(bin) {
		return "", fmt.Errorf("%s: the install left no binary at %s", name, bin)
	}
	return bin, nil
}

// IsExecutable reports whether path is an executable file.
func IsExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// OpGeth returns op-geth's geth built from the module the repository at
// repo executes with (the replace of go-ethereum in its go.mod), kept as
// cache/bin/op-geth-<version>; when it is missing and install is set it is
// built first (go build in the module's own directory, several minutes).
func OpGeth(repo, cache string, install bool, log io.Writer) (string, error) {
	list := exec.Command("go", "list", "-m", "-f", "{{with .Replace}}{{.Dir}} {{.Version}}{{end}}", "github.com/ethereum/go-ethereum")
	list.Dir = repo
	out, err := list.Output()
	if err != nil {
		return "", fmt.Errorf("go list the op-geth module: %v", err)
	}
	dir, version, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if !ok || dir == "" {
		return "", fmt.Errorf("go.mod does not replace go-ethereum with a downloaded module (go list: %q)", out)
	}
	bin := filepath.Join(cache, "bin", "op-geth-"+version)
	return installOnce(cache, bin, install, func() error {
		fmt.Fprintf(log, "installing op-geth %s: go build -o %s ./cmd/geth (in %s; takes several minutes)\n", version, bin, dir)
		build := exec.Command("go", "build", "-o", bin, "./cmd/geth")
		build.Dir = dir // the module's own go.mod and go.sum
		build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "GOWORK=off")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build op-geth %s: %v\n%s", version, err, out)
		}
		return nil
	})
}

// Program finds a program the tests run that the set-up scripts install
// from Debian without its package (scripts/debian-program: promtool,
// haproxy): $env when set, else DefaultCache()/bin/name, else name on PATH
// (a machine that has the package).
func Program(name, env string) (string, error) {
	if bin := os.Getenv(env); bin != "" {
		if !IsExecutable(bin) {
			return "", fmt.Errorf("%s=%s is not an executable file", env, bin)
		}
		return bin, nil
	}
	if bin := filepath.Join(DefaultCache(), "bin", name); IsExecutable(bin) {
		return bin, nil
	}
	if bin, err := exec.LookPath(name); err == nil {
		return bin, nil
	}
	return "", fmt.Errorf("%s not found in %s nor on PATH (set %s)", name, filepath.Join(DefaultCache(), "bin"), env)
}
