package anvil

import (
	"bytes"
	"context"
	"errors"

	"github.com/ethereum/go-ethereum/common"

	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/sequencer"
)

// errNoSlot: no storage slot read by balanceOf holds the balance.
var errNoSlot = errors.New("no slot found")

// noSlotMsg is anvil's message for errNoSlot.
const noSlotMsg = "Unable to set ERC20 balance, no slot found"

// balanceOfSelector is balanceOf(address).
var balanceOfSelector = []byte{0x70, 0xa0, 0x82, 0x31}

// dealERC20: [owner, token, amount] → null. As anvil does: the slots of
// token that balanceOf(owner) reads are tried one by one (amount written,
// balanceOf called again, undone); the first that makes balanceOf answer
// amount is set, as a cheat of the open block.
func (a *API) dealERC20(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 3, 0); err != nil {
		return nil, err
	}
	owner, err := address(p, 0)
	if err != nil {
		return nil, err
	}
	token, err := address(p, 1)
	if err != nil {
		return nil, err
	}
	amount, err := number(p, 2)
	if err != nil {
		return nil, err
	}
	want := amount.Bytes32()
	call := append(append([]byte{}, balanceOfSelector...), common.LeftPadBytes(owner[:], 32)...)
	err = a.s.Cheat(ctx, func(v sequencer.StateView) ([]sequencer.Write, error) {
		c, ok := v.(sequencer.Caller)
		if !ok {
			return nil, errors.New("the open block's state cannot run calls")
		}
		_, slots, err := c.TryCall(nil, token, call)
		if err != nil {
			return nil, errNoSlot
		}
		for _, slot := range slots {
			w := sequencer.SetStorage(token, slot, want)
			ret, _, err := c.TryCall([]sequencer.Write{w}, token, call)
			if err == nil && bytes.Equal(ret, want[:]) {
				return []sequencer.Write{w}, nil
			}
		}
		return nil, errNoSlot
	})
	if errors.Is(err, errNoSlot) {
		return nil, &rpc.InternalError{Msg: noSlotMsg}
	}
	return nil, coded(err)
}
