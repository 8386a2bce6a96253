package toolgatetype

import (
	"reflect"

	"github.com/toolgate/toolgate/internal/strictjson"
)

// checkMembers refuses data when a member's name is not exactly one of v's
// (encoding/json would match it whatever its case) or a member appears
// twice in its object (encoding/json would keep the last): invalid_request
// naming it. Data that is not JSON passes, for the decoder to refuse.
func checkMembers(data []byte, v any) error {
	if m, ok := strictjson.Check(data, strictjson.ShapeOf(reflect.TypeOf(v))).(*strictjson.MemberError); ok {
		return Errorf(CodeInvalidRequest, "%s", m.Error())
	}
	return nil
}
