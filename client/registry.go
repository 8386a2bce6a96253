package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/toolgate/toolgate/toolgatetype"
)

// Entries lists the registry's tools matching query (a case-insensitive
// substring of name, description or category; empty for all), verified
// endpoints first, then the newest, fetching Options.PageSize at a time as
// the loop goes on. The listing pages by offset, so a tool registered or
// removed meanwhile can shift an entry across a page boundary. The
// registry is public; with the client's key it is listed as its caller
// sees it, without the tools the organization's rules hide from it.
//
//	for e, err := range c.Entries(ctx, "weather") {
//		if err != nil { ... }
//		fmt.Println(e.Slug, e.Policy.Approval.Requirement)
//	}
func (c *Client) Entries(ctx context.Context, query string) iter.Seq2[*toolgatetype.RegistryEntry, error] {
	return pages(ctx, func(ctx context.Context, token string) (page[*toolgatetype.RegistryEntry], error) {
		offset, _ := strconv.Atoi(token) // "" on the first page: 0
		q := url.Values{"limit": {strconv.Itoa(c.opts.PageSize)}, "offset": {strconv.Itoa(offset)}}
		if query != "" {
			q.Set("q", query)
		}
		list, err := doJSON[toolgatetype.RegistryList](ctx, c, request{method: http.MethodGet, path: "/v1/registry/tools", query: q})
		if err != nil {
			return page[*toolgatetype.RegistryEntry]{}, err
		}
		p := page[*toolgatetype.RegistryEntry]{items: make([]*toolgatetype.RegistryEntry, len(list.Tools))}
		for i := range list.Tools {
			p.items[i] = &list.Tools[i]
		}
		if end := offset + len(list.Tools); len(list.Tools) > 0 && end < list.Total {
			p.next = strconv.Itoa(end)
		}
		return p, nil
	})
}

// Entry returns the registry entry of a tool, by slug or id. The registry
// is public; with the client's key, a tool a rule hides from its caller
// is tool_not_found.
func (c *Client) Entry(ctx context.Context, tool string) (*toolgatetype.RegistryEntry, error) {
	seg, err := toolSegment(tool)
	if err != nil {
		return nil, err
	}
	return doJSON[toolgatetype.RegistryEntry](ctx, c, request{method: http.MethodGet, path: "/v1/registry/tools/" + seg})
}
