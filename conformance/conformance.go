// Package conformance replays execution-apis `.io` fixtures (">> request" /
// "<< expected response" lines) against a JSON-RPC endpoint and compares the
// answers as hive's rpc-compat does: exact JSON equality, except that an
// error's "message" is not compared where both sides carry one.
package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// EnvDir names the environment variable that points at the fixtures.
const EnvDir = "PRECONF_CONFORMANCE_DIR"

// Dir is the fixture directory: $PRECONF_CONFORMANCE_DIR, or the shared
// folder beside the repository (found from the working directory upward).
func Dir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	return filepath.Join(repoRoot(), "..", "shared", "conformance", "execution-apis")
}

// repoRoot is the nearest directory at or above the working directory that
// holds go.mod (a package's directory while its tests run), or ".".
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return "."
		}
	}
}

// Exchange is one request and its expected response.
type Exchange struct {
	Request  string
	Response json.RawMessage
}

// Case is one .io file.
type Case struct {
	Name      string // category/file.io
	Exchanges []Exchange
	// SpecOnly is set when the file's comments say "speconly": its
	// responses are to be checked for schema validity only (Shape), the
	// recorded values being the recording node's own.
	SpecOnly bool
}

// Load reads every .io file of the given method categories (directory names
// under tests/), sorted by name.
func Load(dir string, categories []string) ([]Case, error) {
	var out []Case
	for _, cat := range categories {
		files, err := filepath.Glob(filepath.Join(dir, "tests", cat, "*.io"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no fixtures for %s in %s", cat, dir)
		}
		sort.Strings(files)
		for _, f := range files {
			c, err := loadFile(f)
			if err != nil {
				return nil, err
			}
			c.Name = cat + "/" + filepath.Base(f)
			out = append(out, c)
		}
	}
	return out, nil
}

func loadFile(path string) (Case, error) {
	f, err := os.Open(path)
	if err != nil {
		return Case{}, err
	}
	defer f.Close()
	var (
		c   Case
		req string
		sc  = bufio.NewScanner(f)
	)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "//") && len(c.Exchanges) == 0 && strings.Contains(line, "speconly"):
			c.SpecOnly = true
		case strings.HasPrefix(line, ">>"):
			req = strings.TrimSpace(line[2:])
		case strings.HasPrefix(line, "<<"):
			resp := json.RawMessage(strings.TrimSpace(line[2:]))
			if !json.Valid(resp) {
				return c, fmt.Errorf("%s: invalid expected response", path)
			}
			c.Exchanges = append(c.Exchanges, Exchange{Request: req, Response: resp})
			req = ""
		}
	}
	return c, sc.Err()
}

// Run replays a case against url and compares exactly (Compare); it returns
// "" on success or the first difference as a JSON path
// ("$.result.transactions[0].v = …, want …").
func Run(client *http.Client, url string, c Case) string {
	return RunWith(client, url, c, Compare)
}

// RunWith replays a case and compares every answer with cmp (Compare or
// Shape).
func RunWith(client *http.Client, url string, c Case, cmp func(want, got []byte) string) string {
	for i, ex := range c.Exchanges {
		resp, err := client.Post(url, "application/json", strings.NewReader(ex.Request))
		if err != nil {
			return fmt.Sprintf("exchange %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return fmt.Sprintf("exchange %d: read: %v", i, err)
		}
		if d := cmp(ex.Response, body); d != "" {
			return fmt.Sprintf("exchange %d: %s", i, d)
		}
	}
	return ""
}

// NewClient is an HTTP client suited to replaying fixtures.
func NewClient() *http.Client { return &http.Client{Timeout: 60 * time.Second} }

// Compare returns "" when got matches want under the rpc-compat rules.
func Compare(want, got []byte) string {
	w, g, bad := decodeBoth(want, got)
	if bad != "" {
		return bad
	}
	stripMessages(w, g)
	return diff(w, g, "$")
}

// decodeBoth decodes an expected and a received answer, or says why not.
func decodeBoth(want, got []byte) (w, g any, bad string) {
	w, err := decode(want)
	if err != nil {
		return nil, nil, "bad expected JSON: " + err.Error()
	}
	g, err = decode(got)
	if err != nil {
		return nil, nil, fmt.Sprintf("response is not JSON (%v): %.200s", err, got)
	}
	return w, g, ""
}

// decode keeps numbers exact (json.Number) so that large integers compare
// digit for digit.
func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func stripMessages(want, got any) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return
		}
		for k := range w {
			if _, ok := g[k]; !ok {
				continue
			}
			if k == "error" {
				we, ok1 := w[k].(map[string]any)
				ge, ok2 := g[k].(map[string]any)
				if ok1 && ok2 {
					_, wm := we["message"]
					_, gm := ge["message"]
					if wm && gm {
						delete(we, "message")
						delete(ge, "message")
					}
				}
			}
			stripMessages(w[k], g[k])
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			return
		}
		for i := range w {
			if i < len(g) {
				stripMessages(w[i], g[i])
			}
		}
	}
}

func diff(want, got any, path string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s = %s, want an object", path, short(got))
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			wv, wok := w[k]
			gv, gok := g[k]
			switch {
			case !gok:
				return fmt.Sprintf("%s.%s missing (want %s)", path, k, short(wv))
			case !wok:
				return fmt.Sprintf("%s.%s unexpected (%s)", path, k, short(gv))
			}
			if d := diff(wv, gv, path+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s = %s, want an array", path, short(got))
		}
		if len(w) != len(g) {
			return fmt.Sprintf("%s has %d items, want %d", path, len(g), len(w))
		}
		for i := range w {
			if d := diff(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	default:
		if !equalScalar(want, got) {
			return fmt.Sprintf("%s = %s, want %s", path, short(got), short(want))
		}
		return ""
	}
}

func equalScalar(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 160 {
		return string(b[:160]) + "…"
	}
	return string(b)
}
