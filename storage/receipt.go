package storage

import "github.com/google/uuid"

// Seal makes the signed receipt of an execution that is finishing (or being
// resolved). A store calls it inside the step that finishes the execution,
// with the principal's next seq (1 for the first) and the hash of the
// principal's previous receipt ("" for the first), and stores what it
// returns in that same step: no finished execution without its receipt, no
// receipt without its execution, and each principal's seqs gapless however
// many instances finish its calls at once.
//
// The response stored is Finish.Response (or Resolve.Response) as it is:
// the receipt is kept in its row only, and reads give the response with
// it (see WithReceipt).
//
// A store may call Seal more than once for one finish (a shared store that
// found another instance had taken the seq it tried calls it again with
// the next); only what the last call returned is stored.
type Seal func(seq int64, prev string) (Sealed, error)

// Sealed is what Seal returns.
type Sealed struct {
	// Receipt is the signed receipt, stored and served byte for byte.
	Receipt []byte
	// Hash is the receipt's hash, the next receipt's prev.
	Hash string
}

// Receipt is one stored receipt: the seq-th of Principal's chain.
type Receipt struct {
	Principal   string
	Seq         int64
	ExecutionID uuid.UUID
	Hash        string // what the next receipt's prev must be
	Signed      []byte // the signed receipt, as Seal returned it
}
