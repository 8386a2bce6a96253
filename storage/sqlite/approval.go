package sqlite

import (
	"context"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// approvalColumns is the select list scanApproval reads.
const approvalColumns = `principal, tool_id, manifest_digest, mode, approved_by, updated_at`

func scanApproval(row scanner) (storage.Approval, error) {
	var (
		a       storage.Approval
		mode    string
		updated int64
	)
	if err := row.Scan(&a.Principal, &a.ToolID, &a.ManifestDigest, &mode, &a.ApprovedBy, &updated); err != nil {
		return storage.Approval{}, translate(err)
	}
	a.Mode = toolgatetype.StandingMode(mode)
	a.UpdatedAt = fromNanos(updated)
	return a, nil
}

// PutApproval creates or replaces the principal's standing approval for a tool.
func (s *Store) PutApproval(ctx context.Context, a storage.Approval) error {
	return s.write(ctx, func(tx *writeTx) error { return putApproval(tx, a) })
}

// putApproval creates or replaces a standing approval inside a write.
func putApproval(tx *writeTx, a storage.Approval) error {
	_, err := tx.exec(`
		INSERT INTO approvals (principal, tool_id, manifest_digest, mode, approved_by, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (principal, tool_id) DO UPDATE
		SET manifest_digest = excluded.manifest_digest, mode = excluded.mode,
			approved_by = excluded.approved_by, updated_at = excluded.updated_at`,
		a.Principal, a.ToolID, a.ManifestDigest, string(a.Mode), a.ApprovedBy, nanos(a.UpdatedAt))
	return err
}

// GetApproval returns the principal's standing approval for a tool.
// ErrNotFound if absent.
func (s *Store) GetApproval(ctx context.Context, principal, toolID string) (storage.Approval, error) {
	return getApproval(s.pool(ctx), principal, toolID)
}

// getApproval reads the principal's standing approval for a tool.
func getApproval(r reader, principal, toolID string) (storage.Approval, error) {
	return scanApproval(r.queryRow(`SELECT `+approvalColumns+` FROM approvals WHERE principal = ? AND tool_id = ?`,
		principal, toolID))
}

// ListApprovals returns the principal's standing approvals ordered by tool
// id, byte by byte as Go compares strings (SQLite's default collation).
func (s *Store) ListApprovals(ctx context.Context, principal string) ([]storage.Approval, error) {
	rows, err := s.pool(ctx).query(`SELECT `+approvalColumns+` FROM approvals WHERE principal = ? ORDER BY tool_id`, principal)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []storage.Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, translate(rows.Err())
}

// DeleteApproval removes a standing approval. ErrNotFound if absent.
func (s *Store) DeleteApproval(ctx context.Context, principal, toolID string) error {
	return s.write(ctx, func(tx *writeTx) error {
		n, err := tx.exec(`DELETE FROM approvals WHERE principal = ? AND tool_id = ?`, principal, toolID)
		if err == nil && n == 0 {
			return storage.ErrNotFound
		}
		return err
	})
}
