package follower

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common/hexutil"
)

// hexutilBig decodes a JSON quantity.
type hexutilBig hexutil.Big

func (b *hexutilBig) UnmarshalJSON(data []byte) error { return (*hexutil.Big)(b).UnmarshalJSON(data) }

func (b *hexutilBig) Int() *big.Int { return (*hexutil.Big)(b).ToInt() }
