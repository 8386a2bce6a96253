package sqlstore

import "github.com/toolgate/toolgate/storage"

// Rows is what CollectUsage reads of a driver's result rows (pgx.Rows,
// *sql.Rows).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// CollectUsage adds rows of (tool id, count, unique users) to out. With
// onlyUsed, a tool whose counters are both zero is left out, as
// storage.UsageLister's answers leave out tools never used. The errors are
// the driver's own, for the backend to translate.
func CollectUsage(rows Rows, out map[string]storage.Usage, onlyUsed bool) error {
	for rows.Next() {
		var (
			id string
			u  storage.Usage
		)
		if err := rows.Scan(&id, &u.Count, &u.UniqueUsers); err != nil {
			return err
		}
		if !onlyUsed || u.Count > 0 || u.UniqueUsers > 0 {
			out[id] = u
		}
	}
	return rows.Err()
}
