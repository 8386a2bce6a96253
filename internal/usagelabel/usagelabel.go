// Package usagelabel says how much a tool is used, in the coarse words a
// registry listing shows.
package usagelabel

import (
	"strconv"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Of turns counters into what callers see. Labels are coarse so that
// a registry listing cannot be used to watch a competitor's traffic.
func Of(u storage.Usage, exact bool) toolgatetype.Usage {
	out := toolgatetype.Usage{
		Tracked:          true,
		Coverage:         "gateway_calls",
		InvocationsLabel: invocationsLabel(u.Count),
		UsersLabel:       usersLabel(u.UniqueUsers),
	}
	if exact {
		count, users := u.Count, u.UniqueUsers
		out.Count, out.UniqueUsers = &count, &users
	}
	return out
}

// invocationsLabel is the coarse label for a number of completed calls:
// "Under 1K invokes" below 1000, else compact with one decimal ("1.3K invokes").
func invocationsLabel(n int64) string {
	if n < 1000 {
		return "Under 1K invokes"
	}
	return compact(n) + " invokes"
}

// usersLabel is the coarse label for a number of unique users: "Under 100
// users" below 100, else compact ("125 users", "1.2K users").
func usersLabel(n int64) string {
	if n < 100 {
		return "Under 100 users"
	}
	return compact(n) + " users"
}

// compact writes n with a K, M or B suffix and one decimal, truncated rather
// than rounded so a label never overstates (1999 is "1.9K", not "2K"); a
// trailing ".0" is dropped.
func compact(n int64) string {
	units := []struct {
		size   int64
		suffix string
	}{{1_000_000_000, "B"}, {1_000_000, "M"}, {1_000, "K"}}
	for _, u := range units {
		if n >= u.size {
			tenths := n * 10 / u.size
			s := strconv.FormatInt(tenths/10, 10)
			if tenths%10 != 0 {
				s += "." + strconv.FormatInt(tenths%10, 10)
			}
			return s + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// BehaviorStatus is "established" once a tool has enough distinct users for
// its behaviour to be known from the gateway's own calls.
func BehaviorStatus(u storage.Usage) string {
	if u.UniqueUsers >= 100 {
		return "established"
	}
	return "new"
}
