package wallet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// RegistryFile is the registry's file name inside the data directory.
const RegistryFile = "wallet.json"

const registryVersion = 1

// registryFile is the on-disk form.
type registryFile struct {
	Version  int     `json:"version"`
	Selected string  `json:"selected"`
	Self     *self   `json:"self,omitempty"`
	Chains   []Chain `json:"chains"`
}

// self remembers which RPC URLs the node put into its own chain's entry, so
// that they are replaced (not accumulated) when the node restarts on another
// address.
type self struct {
	ChainID string   `json:"chainId"`
	RPCURLs []string `json:"rpcUrls"`
}

// registry is the wallet's set of chains and the selected one. It is not
// safe for concurrent use: Wallet serialises access.
type registry struct {
	path     string // "" = memory only
	chains   []Chain
	selected string
	self     self
}

// loadRegistry reads path (a missing file is an empty registry) and makes
// sure the node's own chain is present.
func loadRegistry(path string, own Chain) (*registry, error) {
	r := &registry{path: path}
	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("wallet registry: %w", err)
		default:
			var f registryFile
			if err := json.Unmarshal(data, &f); err != nil {
				return nil, fmt.Errorf("wallet registry %s is corrupt: %w", path, err)
			}
			if f.Version != registryVersion {
				return nil, fmt.Errorf("wallet registry %s: unsupported version %d", path, f.Version)
			}
			for _, c := range f.Chains {
				if c.ChainID == "" || r.index(c.ChainID) >= 0 {
					return nil, fmt.Errorf("wallet registry %s is corrupt: bad or repeated chain id %q", path, c.ChainID)
				}
				r.chains = append(r.chains, c)
			}
			r.selected = f.Selected
			if f.Self != nil {
				r.self = *f.Self
			}
		}
	}
	r.setSelf(own)
	return r, nil
}

func (r *registry) index(id string) int {
	return slices.IndexFunc(r.chains, func(c Chain) bool { return c.ChainID == id })
}

func (r *registry) get(id string) (Chain, bool) {
	if i := r.index(id); i >= 0 {
		return r.chains[i].clone(), true
	}
	return Chain{}, false
}

// put stores c, replacing the entry with its chain id.
func (r *registry) put(c Chain) {
	if i := r.index(c.ChainID); i >= 0 {
		r.chains[i] = c.clone()
		return
	}
	r.chains = append(r.chains, c.clone())
}

func (r *registry) list() []Chain {
	out := make([]Chain, len(r.chains))
	for i, c := range r.chains {
		out[i] = c.clone()
	}
	return out
}

// setSelf makes the node's own chain present with its current RPC URLs: the
// URLs a previous run put there for the node are replaced; anything a person
// approved for that chain stays. A chain id change (another genesis) leaves
// the old entry as an ordinary one.
func (r *registry) setSelf(own Chain) {
	i := r.index(own.ChainID)
	if i < 0 {
		r.chains = append([]Chain{own.clone()}, r.chains...)
	} else {
		c := r.chains[i]
		if r.self.ChainID == own.ChainID {
			c.RPCURLs = slices.DeleteFunc(c.RPCURLs, func(u string) bool { return slices.Contains(r.self.RPCURLs, u) })
		}
		c.RPCURLs = unionNewFirst(c.RPCURLs, own.RPCURLs)
		r.chains[i] = c
	}
	r.self = self{ChainID: own.ChainID, RPCURLs: slices.Clone(own.RPCURLs)}
	if r.selected == "" || r.index(r.selected) < 0 {
		r.selected = own.ChainID
	}
}

// save writes the registry atomically: a temporary file in the same
// directory, synced, then renamed over the old one, then the directory synced.
func (r *registry) save() error {
	if r.path == "" {
		return nil
	}
	f := registryFile{Version: registryVersion, Selected: r.selected, Self: &r.self, Chains: r.chains}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(r.path, append(data, '\n'))
}

func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
