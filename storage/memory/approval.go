package memory

import (
	"cmp"
	"context"
	"slices"

	"github.com/toolgate/toolgate/storage"
)

// PutApproval implements storage.Store.
func (s *Store) PutApproval(ctx context.Context, a storage.Approval) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putApproval(a)
	return nil
}

// putApproval creates or replaces a standing approval. The caller holds s.mu.
func (s *Store) putApproval(a storage.Approval) {
	m := s.approvals[a.Principal]
	if m == nil {
		m = make(map[string]storage.Approval)
		s.approvals[a.Principal] = m
	}
	m[a.ToolID] = a
}

// GetApproval implements storage.Store.
func (s *Store) GetApproval(ctx context.Context, principal, toolID string) (storage.Approval, error) {
	if err := ctx.Err(); err != nil {
		return storage.Approval{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.approvals[principal][toolID]
	if !ok {
		return storage.Approval{}, storage.ErrNotFound
	}
	return a, nil
}

// ListApprovals implements storage.Store.
func (s *Store) ListApprovals(ctx context.Context, principal string) ([]storage.Approval, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	m := s.approvals[principal]
	out := make([]storage.Approval, 0, len(m))
	for _, a := range m {
		out = append(out, a)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b storage.Approval) int { return cmp.Compare(a.ToolID, b.ToolID) })
	return out, nil
}

// DeleteApproval implements storage.Store.
func (s *Store) DeleteApproval(ctx context.Context, principal, toolID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.approvals[principal]
	if _, ok := m[toolID]; !ok {
		return storage.ErrNotFound
	}
	delete(m, toolID)
	if len(m) == 0 {
		delete(s.approvals, principal)
	}
	return nil
}
