package storage

import (
	"context"
	"time"
)

// AlertLedger is an optional Store interface that makes an alert go out
// once across every process sharing the store: a budget's threshold
// crossing, which any of them may see first. storagetest.Run checks it
// when a Store implements it; a gateway on a store without it claims in
// its own memory, once per process.
type AlertLedger interface {
	// ClaimAlert records id (at most MaxAlertIDLength bytes) as sent and
	// reports whether this call recorded it: of any number of concurrent
	// claims of one id, from any number of processes, exactly one gets
	// true, and every claim after it false. Claims made before
	// Prune.LedgerBefore may be forgotten by Prune.
	ClaimAlert(ctx context.Context, id string, now time.Time) (bool, error)
}

// MaxAlertIDLength is the longest alert id an AlertLedger must keep.
const MaxAlertIDLength = 300
