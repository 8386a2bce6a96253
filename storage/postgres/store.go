package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/internal/batcher"
)

// Interface guards.
var _ storage.Store = (*Store)(nil)

// Store is a storage.Store kept in PostgreSQL. Every guarantee of the
// storage contract is enforced by the database (primary keys, conditional
// updates, row locks inside transactions), never by locks in this process,
// so any number of Stores in any number of processes may share one schema.
// (The one lock a Store keeps, each principal's turn at sealing a receipt,
// only spares its own finishes a retry; see receipt.go.)
type Store struct {
	pool *pgxpool.Pool
	// ownsPool is true when Open created the pool, so Close must close it.
	ownsPool bool
	// schema is the configured schema, already quoted for use in SQL.
	schema string
	// syncAdmission is Config.SynchronousAdmission.
	syncAdmission bool
	// memo is what the Store remembers for the calls it admits (see memo).
	memo *memo
	// chains is what the Store remembers of receipt chains (see chains).
	chains *chains
	// budgets is the budgets whose admission locks exist (see knownLocks),
	// principals the principals' (see admitBatch).
	budgets, principals *knownLocks
	// admissions and finishes share round trips between concurrent calls
	// (see admitbatch.go and finishbatch.go).
	admissions *batcher.Batcher[toAdmit, admitOutcome]
	finishes   *batcher.Batcher[storage.Finish, finishOutcome]
	// quotes shares them between concurrent quotes (see quotebatch.go).
	quotes *batcher.Batcher[storage.Reads, readOutcome]
	// lockWait is how long a batch waits for a lock (see batchSettings).
	lockWait time.Duration
	// batchRetries counts the batches that failed as a whole and were
	// sent again call by call.
	batchRetries atomic.Int64
	// waiting keeps calls that wait for a lock off the connections that
	// other principals need (see waiting).
	waiting *waiting
	// plain is the running executions this Store admitted in no budget,
	// whose finish may leave the budgets' tables out (see plainCalls).
	plain *plainCalls
}

// New returns a Store that keeps its tables in cfg.Schema of the database
// behind pool, creating or upgrading them first. Several processes may call
// New on the same schema at once: migrations are serialized by the database.
// The caller keeps ownership of pool; Close does not close it.
func New(ctx context.Context, pool *pgxpool.Pool, cfg *Config) (*Store, error) {
	if pool == nil {
		return nil, fmt.Errorf("postgres: New needs a pool")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Store{pool: pool, schema: pgx.Identifier{cfg.Schema}.Sanitize(), syncAdmission: cfg.SynchronousAdmission,
		memo: newMemo(), chains: newChains(), budgets: newKnownLocks(), principals: newKnownLocks(), plain: newPlainCalls(),
		lockWait: lockWait, waiting: newWaiting(int(pool.Config().MaxConns))}
	s.admissions = batcher.New(maxAdmitBatch, batchesInFlight, admissionKey, s.runAdmissions,
		func(err error) admitOutcome { return admitOutcome{err: err} })
	s.finishes = batcher.New(maxFinishBatch, batchesInFlight, nil, s.runFinishes,
		func(err error) finishOutcome { return finishOutcome{err: err} })
	s.quotes = batcher.New(maxQuoteBatch, batchesInFlight, nil, s.runQuotes,
		func(err error) readOutcome { return readOutcome{err: err} })
	if err := s.migrate(ctx, cfg.Schema); err != nil {
		return nil, err
	}
	return s, nil
}

// Open connects to the database at url (a PostgreSQL URL or key=value
// connection string understood by pgxpool) and returns a Store over a pool
// that it owns: Close closes it.
func Open(ctx context.Context, url string, cfg *Config) (*Store, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open pool: %w", err)
	}
	s, err := New(ctx, pool, cfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownsPool = true
	return s, nil
}

// Close releases the pool when the Store was made by Open. A Store made by
// New leaves the caller's pool open.
func (s *Store) Close() {
	if s.ownsPool {
		s.pool.Close()
	}
}

// sql qualifies the table names of a query with the configured schema. The
// pool may belong to the caller, so the Store cannot rely on a search_path
// set on its connections; qualified names also keep pgx's statement cache
// correct when two Stores over different schemas share one pool.
func (s *Store) sql(query string) string {
	return strings.ReplaceAll(query, "{schema}", s.schema)
}
