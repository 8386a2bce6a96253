package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// approvalColumns is the select list scanApproval reads.
const approvalColumns = `principal, tool_id, manifest_digest, mode, approved_by, updated_at`

func scanApproval(row pgx.Row) (storage.Approval, error) {
	var (
		a    storage.Approval
		mode string
	)
	if err := row.Scan(&a.Principal, &a.ToolID, &a.ManifestDigest, &mode, &a.ApprovedBy, &a.UpdatedAt); err != nil {
		return storage.Approval{}, translate(err)
	}
	a.Mode = toolgatetype.StandingMode(mode)
	a.UpdatedAt = utc(a.UpdatedAt)
	return a, nil
}

// PutApproval creates or replaces the principal's standing approval for a tool.
func (s *Store) PutApproval(ctx context.Context, a storage.Approval) error {
	_, err := s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.approvals (principal, tool_id, manifest_digest, mode, approved_by, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6)`+upsertApprovalSQL),
		a.Principal, a.ToolID, a.ManifestDigest, string(a.Mode), a.ApprovedBy, a.UpdatedAt)
	s.memo.forget(a.Principal, a.ToolID)
	return translate(err)
}

// upsertApprovalSQL ends an insert into approvals so that it replaces the
// principal's approval of the tool, if any.
const upsertApprovalSQL = `
	ON CONFLICT (principal, tool_id) DO UPDATE
	SET manifest_digest = EXCLUDED.manifest_digest, mode = EXCLUDED.mode,
		approved_by = EXCLUDED.approved_by, updated_at = EXCLUDED.updated_at`

// GetApproval returns the principal's standing approval for a tool.
// ErrNotFound if absent.
func (s *Store) GetApproval(ctx context.Context, principal, toolID string) (storage.Approval, error) {
	return scanApproval(s.pool.QueryRow(ctx, s.sql(getApprovalSQL), principal, toolID))
}

// getApprovalSQL reads the approval of principal $1 for tool $2 for scanApproval.
const getApprovalSQL = `SELECT ` + approvalColumns + ` FROM {schema}.approvals WHERE principal = $1 AND tool_id = $2`

// ListApprovals returns the principal's standing approvals ordered by tool id.
func (s *Store) ListApprovals(ctx context.Context, principal string) ([]storage.Approval, error) {
	// COLLATE "C" orders by bytes, as Go compares strings, whatever the
	// database's default collation.
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT `+approvalColumns+` FROM {schema}.approvals WHERE principal = $1 ORDER BY tool_id COLLATE "C"`), principal)
	if err != nil {
		return nil, translate(err)
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
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// DeleteApproval removes a standing approval. ErrNotFound if absent.
func (s *Store) DeleteApproval(ctx context.Context, principal, toolID string) error {
	tag, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.approvals WHERE principal = $1 AND tool_id = $2`),
		principal, toolID)
	s.memo.forget(principal, toolID)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return storage.ErrNotFound
	}
	return nil
}
