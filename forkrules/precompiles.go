package forkrules

import (
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
)

// Karst's precompile set is Jovian's with three contracts replaced (op-revm's
// karst(): the same addresses, so access lists warm the same accounts):
//   - 0x05 MODEXP by Osaka's (EIP-7823 input caps, EIP-7883 repricing);
//   - 0x0100 P256VERIFY by Osaka's (EIP-7951: 6,900 gas, RIP-7212's 3,450
//     before);
//   - 0x08 bn256Pairing by Istanbul's pricing with a 57,600-byte (300-pair)
//     input cap, down from Jovian's 81,984 (427 pairs).
//
// The contracts are op-geth's own, taken from its exported sets; only the
// pairing cap is written here.
var (
	modexpAddr  = common.BytesToAddress([]byte{0x05})
	pairingAddr = common.BytesToAddress([]byte{0x08})
	p256Addr    = common.BytesToAddress([]byte{0x01, 0x00})
)

// KarstPairingMaxInput is Karst's bn256Pairing input cap: 300 pairs of 192
// bytes.
const KarstPairingMaxInput = 300 * 192

// errPairingInputSize is op-geth's text for a pairing input over a cap.
var errPairingInputSize = errors.New("bad elliptic curve pairing input size")

// cappedPairing is bn256Pairing refusing inputs over max bytes; a refusal
// consumes the call's gas, as any precompile error does.
type cappedPairing struct {
	vm.PrecompiledContract
	max int
}

func (c *cappedPairing) Run(input []byte) ([]byte, error) {
	if len(input) > c.max {
		return nil, errPairingInputSize
	}
	return c.PrecompiledContract.Run(input)
}

// karstPrecompiles is the Karst set, built once and never written.
var karstPrecompiles = func() vm.PrecompiledContracts {
	set := maps.Clone(vm.PrecompiledContractsJovian)
	set[modexpAddr] = vm.PrecompiledContractsOsaka[modexpAddr]
	set[p256Addr] = vm.PrecompiledContractsOsaka[p256Addr]
	set[pairingAddr] = &cappedPairing{PrecompiledContract: vm.PrecompiledContractsIstanbul[pairingAddr], max: KarstPairingMaxInput}
	return set
}()

// karstAddresses are the Karst set's addresses, sorted.
var karstAddresses = func() []common.Address {
	out := slices.Collect(maps.Keys(karstPrecompiles))
	slices.SortFunc(out, func(a, b common.Address) int { return a.Cmp(b) })
	return out
}()

// opgethSets caches op-geth's precompile sets (vm.ActivePrecompiledContracts
// copies its set on every call), by the case of op-geth's selection that
// picks them: the OP forks first, then L1's forks newest first.
var opgethSets [12]struct {
	once sync.Once
	set  vm.PrecompiledContracts
}

// opgethSet is op-geth's set for r, shared and read-only.
func opgethSet(r params.Rules) vm.PrecompiledContracts {
	cases := [...]bool{r.IsOptimismJovian, r.IsOptimismIsthmus, r.IsOptimismGranite, r.IsOptimismFjord, r.IsVerkle,
		r.IsOsaka, r.IsPrague, r.IsCancun, r.IsBerlin, r.IsIstanbul, r.IsByzantium}
	i := len(cases) // Homestead's
	for j, on := range cases {
		if on {
			i = j
			break
		}
	}
	c := &opgethSets[i]
	c.once.Do(func() { c.set = vm.ActivePrecompiledContracts(r) })
	return c.set
}
