package awssim

import (
	"math/big"
	"time"

	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/document"
	"github.com/aws/smithy-go/traits"
)

// queryErrorCode returns the awsQueryError code the SDK model gives err's
// shape, when it has one: query-compatible JSON services (SQS) answer
// X-Amzn-Query-Error with it (QueueDoesNotExist is
// AWS.SimpleQueueService.NonExistentQueue), and the SDK reports it as the
// error's code.
func queryErrorCode(err smithy.APIError) (string, bool) {
	serializable, ok := err.(smithy.Serializable)
	if !ok {
		return "", false
	}
	var s schemaRecorder
	serializable.Serialize(&s)
	if s.schema == nil {
		return "", false
	}
	trait, ok := smithy.SchemaTrait[*traits.AWSQueryError](s.schema)
	if !ok || trait.ErrorCode == "" {
		return "", false
	}
	return trait.ErrorCode, true
}

// schemaRecorder is a smithy.ShapeSerializer that keeps the schema of the
// outermost struct written and discards everything else: how the model's
// traits of an SDK type are found from a value.
type schemaRecorder struct{ schema *smithy.Schema }

func (r *schemaRecorder) WriteStruct(s *smithy.Schema) {
	if r.schema == nil {
		r.schema = s
	}
}

func (*schemaRecorder) Bytes() []byte                                { return nil }
func (*schemaRecorder) WriteInt8(*smithy.Schema, int8)               {}
func (*schemaRecorder) WriteInt16(*smithy.Schema, int16)             {}
func (*schemaRecorder) WriteInt32(*smithy.Schema, int32)             {}
func (*schemaRecorder) WriteInt64(*smithy.Schema, int64)             {}
func (*schemaRecorder) WriteFloat32(*smithy.Schema, float32)         {}
func (*schemaRecorder) WriteFloat64(*smithy.Schema, float64)         {}
func (*schemaRecorder) WriteBool(*smithy.Schema, bool)               {}
func (*schemaRecorder) WriteString(*smithy.Schema, string)           {}
func (*schemaRecorder) WriteBigInt(*smithy.Schema, *big.Int)         {}
func (*schemaRecorder) WriteBigFloat(*smithy.Schema, *big.Float)     {}
func (*schemaRecorder) WriteBlob(*smithy.Schema, []byte)             {}
func (*schemaRecorder) WriteTime(*smithy.Schema, time.Time)          {}
func (*schemaRecorder) WriteUnion(_, _ *smithy.Schema)               {}
func (*schemaRecorder) CloseUnion()                                  {}
func (*schemaRecorder) WriteDocument(*smithy.Schema, document.Value) {}
func (*schemaRecorder) WriteNil(*smithy.Schema)                      {}
func (*schemaRecorder) CloseStruct()                                 {}
func (*schemaRecorder) WriteList(*smithy.Schema)                     {}
func (*schemaRecorder) CloseList()                                   {}
func (*schemaRecorder) WriteMap(*smithy.Schema)                      {}
func (*schemaRecorder) WriteKey(*smithy.Schema, string)              {}
func (*schemaRecorder) CloseMap()                                    {}

var _ smithy.ShapeSerializer = (*schemaRecorder)(nil)
