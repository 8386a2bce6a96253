package toolgate_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
)

// countingStore counts the Store methods the gateway calls: on a shared
// database each is a round trip.
type countingStore struct {
	storage.Store
	mu    sync.Mutex
	calls map[string]int
}

func (s *countingStore) count(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[name]++
}

func (s *countingStore) take() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = map[string]int{}
	return c
}

// ReadBatch reads method by method, so that each read is counted: on a
// store that batches them they are one round trip, but which reads a step
// makes is what is pinned here.
func (s *countingStore) ReadBatch(ctx context.Context, r storage.Reads) (storage.ReadResult, error) {
	return storage.ReadEach(ctx, s, r)
}

// AdmitCall reads, decides and begins in turn, so that each is counted.
func (s *countingStore) AdmitCall(ctx context.Context, r storage.Reads, decide func(storage.ReadResult) (storage.Begin, error)) (storage.BeginResult, error) {
	return storage.AdmitEach(ctx, s, r, decide)
}

func (s *countingStore) CreateQuote(ctx context.Context, q storage.Quote) error {
	s.count("CreateQuote")
	return s.Store.CreateQuote(ctx, q)
}

// CreateQuoteCapped is how the gateway stores a quote; it is counted as
// CreateQuote, the one write a quote makes whatever its cap.
func (s *countingStore) CreateQuoteCapped(ctx context.Context, q storage.Quote, max int) error {
	s.count("CreateQuote")
	return s.Store.CreateQuoteCapped(ctx, q, max)
}

func (s *countingStore) GetQuote(ctx context.Context, id uuid.UUID) (storage.Quote, error) {
	s.count("GetQuote")
	return s.Store.GetQuote(ctx, id)
}

func (s *countingStore) GetIdempotency(ctx context.Context, principal, key string) (storage.IdempotencyRecord, error) {
	s.count("GetIdempotency")
	return s.Store.GetIdempotency(ctx, principal, key)
}

func (s *countingStore) BeginExecution(ctx context.Context, b storage.Begin) (storage.BeginResult, error) {
	s.count("BeginExecution")
	return s.Store.BeginExecution(ctx, b)
}

func (s *countingStore) FinishExecution(ctx context.Context, f storage.Finish) error {
	s.count("FinishExecution")
	return s.Store.FinishExecution(ctx, f)
}

func (s *countingStore) MeasureLimits(ctx context.Context, principal string, l []storage.Limit) ([]decimal.Decimal, error) {
	s.count("MeasureLimits")
	return s.Store.MeasureLimits(ctx, principal, l)
}

func (s *countingStore) GetApproval(ctx context.Context, principal, toolID string) (storage.Approval, error) {
	s.count("GetApproval")
	return s.Store.GetApproval(ctx, principal, toolID)
}

func (s *countingStore) GetSpendControls(ctx context.Context, principal string) (toolgatetype.SpendControls, error) {
	s.count("GetSpendControls")
	return s.Store.GetSpendControls(ctx, principal)
}

// TestNewCallStoreRoundTrips pins what a new, approved call costs the store,
// so a change that adds a round trip to every call is a visible decision:
// the key's record is read only when something refuses the call, and the
// caller's standing approval only when the approval sent does not settle it.
func TestNewCallStoreRoundTrips(t *testing.T) {
	t.Parallel()
	store := &countingStore{Store: memory.New(), calls: map[string]int{}}
	e := newEnvWithStore(t, store, []toolSpec{callable})
	q := e.quote("alice", "echo")
	assert.Equal(t, map[string]int{"GetApproval": 1, "GetSpendControls": 1, "MeasureLimits": 1, "CreateQuote": 1}, store.take())

	_, err := e.gw.Call(context.Background(), "alice", approvedCall(q, "k1", "hi"))
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"GetQuote": 1, "GetSpendControls": 1, "BeginExecution": 1, "FinishExecution": 1}, store.take())

	res, err := e.gw.Call(context.Background(), "alice", approvedCall(q, "k1", "hi"))
	require.NoError(t, err)
	assert.True(t, res.Replayed, "a retry is still answered from the record")
}

// operatorApprovals supplies standing approvals from outside the store.
type operatorApprovals map[string]storage.Approval

func (o operatorApprovals) GetApproval(_ context.Context, principal, toolID string) (storage.Approval, error) {
	a, ok := o[principal+"/"+toolID]
	if !ok {
		return storage.Approval{}, storage.ErrNotFound
	}
	return a, nil
}

// TestOperatorApprovalsAreStillRead checks that a call with the approval
// sent still reads standing approvals from an operator's source: only
// approvals kept in the store, where first uses are remembered, can be
// left unread.
func TestOperatorApprovalsAreStillRead(t *testing.T) {
	t.Parallel()
	medium := readOnly()
	medium.OpenWorld = registry.Bool(true)
	firstUse := toolSpec{slug: "fu", immutable: true, endpointVerified: true, capabilities: medium}
	approvals := operatorApprovals{}
	e := newEnv(t, []toolSpec{firstUse}, func(c *toolgate.Config) { c.Approvals = approvals })
	q := e.quote("alice", "fu")
	approvals["alice/"+q.Tool.ID] = storage.Approval{Principal: "alice", ToolID: q.Tool.ID, ManifestDigest: *q.Quote.ManifestDigest, Mode: toolgatetype.ApprovalNeverAsk}

	_, err := e.gw.Call(context.Background(), "alice", approvedCall(q, "k1", "hi"))
	require.NoError(t, err)
	// The operator's approval covered the call, so no first use was recorded.
	_, err = e.store.GetApproval(context.Background(), "alice", q.Tool.ID)
	assert.ErrorIs(t, err, storage.ErrNotFound)
}
