package awssim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// memberName maps a Go field name of an SDK type to its JSON member name.
type memberName func(goName string) string

// awsJSONName is the member naming of the awsJson protocols: the Smithy
// member names the SDK's Go fields are generated from (GetParameterInput.Name
// is "Name" on the wire).
func awsJSONName(goName string) string { return goName }

// restJSONName is the member naming of the restJson1 services served here
// (EKS), whose members are camelCase: Cluster.CertificateAuthority is
// "certificateAuthority".
func restJSONName(goName string) string {
	r, size := utf8.DecodeRuneInString(goName)
	return string(unicode.ToLower(r)) + goName[size:]
}

var (
	sdkTimeType = reflect.TypeOf(time.Time{})
	byteType    = reflect.TypeOf(byte(0))
)

// skippedField reports fields of SDK types that are not modeled members:
// unexported ones (noSmithyDocumentSerde), an output's ResultMetadata and an
// error's ErrorCodeOverride.
func skippedField(f reflect.StructField) bool {
	return !f.IsExported() || f.Name == "ResultMetadata" || f.Name == "ErrorCodeOverride"
}

// encodeJSON renders an SDK value as the tree encoding/json writes in the
// AWS JSON protocols: structs as objects of their set members (nil pointers,
// slices and maps and zero scalars omitted), timestamps as epoch seconds
// with millisecond fractions, blobs as base64, enums as their strings.
func encodeJSON(v reflect.Value, name memberName) (any, error) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil, nil
		}
		return encodeJSON(v.Elem(), name)
	case reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return nil, fmt.Errorf("%s is a union or document, which the simulated AWS does not encode", v.Type())
	case reflect.Struct:
		if v.Type() == sdkTimeType {
			t := v.Interface().(time.Time)
			return json.Number(strconv.FormatFloat(float64(t.UnixMilli())/1e3, 'f', -1, 64)), nil
		}
		return encodeStruct(v, name)
	case reflect.Slice:
		if v.Type().Elem() == byteType {
			return base64.StdEncoding.EncodeToString(v.Bytes()), nil
		}
		out := make([]any, v.Len())
		for i := range v.Len() {
			e, err := encodeJSON(v.Index(i), name)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = e
		}
		return out, nil
	case reflect.Map:
		out := make(map[string]any, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			e, err := encodeJSON(iter.Value(), name)
			if err != nil {
				return nil, fmt.Errorf("[%q]: %w", iter.Key().String(), err)
			}
			out[iter.Key().String()] = e
		}
		return out, nil
	case reflect.String:
		return v.String(), nil
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), nil
	case reflect.Float32, reflect.Float64:
		return encodeFloat(v.Float()), nil
	default:
		return nil, fmt.Errorf("%s values are not an AWS JSON shape", v.Type())
	}
}

func encodeStruct(v reflect.Value, name memberName) (map[string]any, error) {
	out := map[string]any{}
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		if skippedField(f) || omitted(fv) {
			continue
		}
		e, err := encodeJSON(fv, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		out[name(f.Name)] = e
	}
	return out, nil
}

// omitted reports a member that is not set: a nil pointer, slice, map or
// interface, or a zero scalar (the SDK serializes non-pointer members only
// when they differ from their zero default).
func omitted(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return v.IsNil()
	case reflect.Struct:
		return v.Type() == sdkTimeType && v.IsZero()
	default:
		return v.IsZero()
	}
}

// encodeFloat writes the non-finite values as the AWS JSON protocols do,
// as the strings NaN, Infinity and -Infinity.
func encodeFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// decodeJSON sets dst from raw, a tree decoded by encoding/json with
// UseNumber, following the rules encodeJSON writes by. path names the
// member in errors ("Filters[0].Value").
func decodeJSON(dst reflect.Value, raw any, name memberName, path string) error {
	if raw == nil {
		return nil
	}
	switch dst.Kind() {
	case reflect.Pointer:
		elem := reflect.New(dst.Type().Elem())
		if err := decodeJSON(elem.Elem(), raw, name, path); err != nil {
			return err
		}
		dst.Set(elem)
		return nil
	case reflect.Struct:
		if dst.Type() == sdkTimeType {
			return decodeTime(dst, raw, path)
		}
		return decodeStruct(dst, raw, name, path)
	case reflect.Slice:
		return decodeSlice(dst, raw, name, path)
	case reflect.Map:
		obj, ok := raw.(map[string]any)
		if !ok {
			return mismatch(path, "an object", raw)
		}
		m := reflect.MakeMapWithSize(dst.Type(), len(obj))
		for k, v := range obj {
			e := reflect.New(dst.Type().Elem()).Elem()
			if err := decodeJSON(e, v, name, fmt.Sprintf("%s[%q]", path, k)); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(k).Convert(dst.Type().Key()), e)
		}
		dst.Set(m)
		return nil
	default:
		return decodeScalar(dst, raw, path)
	}
}

func decodeStruct(dst reflect.Value, raw any, name memberName, path string) error {
	obj, ok := raw.(map[string]any)
	if !ok {
		return mismatch(path, "an object", raw)
	}
	for i := range dst.NumField() {
		f := dst.Type().Field(i)
		if skippedField(f) {
			continue
		}
		member := name(f.Name)
		v, ok := obj[member]
		if !ok {
			continue
		}
		if err := decodeJSON(dst.Field(i), v, name, join(path, member)); err != nil {
			return err
		}
	}
	return nil
}

func decodeSlice(dst reflect.Value, raw any, name memberName, path string) error {
	if dst.Type().Elem() == byteType {
		s, ok := raw.(string)
		if !ok {
			return mismatch(path, "a base64 string", raw)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("%s: invalid base64: %w", path, err)
		}
		dst.SetBytes(b)
		return nil
	}
	arr, ok := raw.([]any)
	if !ok {
		return mismatch(path, "an array", raw)
	}
	s := reflect.MakeSlice(dst.Type(), len(arr), len(arr))
	for i, v := range arr {
		if err := decodeJSON(s.Index(i), v, name, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	dst.Set(s)
	return nil
}

func decodeScalar(dst reflect.Value, raw any, path string) error {
	switch dst.Kind() {
	case reflect.String:
		s, ok := raw.(string)
		if !ok {
			return mismatch(path, "a string", raw)
		}
		dst.SetString(s)
	case reflect.Bool:
		b, ok := raw.(bool)
		if !ok {
			return mismatch(path, "a boolean", raw)
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := raw.(json.Number)
		if !ok {
			return mismatch(path, "an integer", raw)
		}
		i, err := n.Int64()
		if err != nil || dst.OverflowInt(i) {
			return fmt.Errorf("%s: %s is not a %s", path, n, dst.Type())
		}
		dst.SetInt(i)
	case reflect.Float32, reflect.Float64:
		f, err := decodeFloat(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		dst.SetFloat(f)
	default:
		return fmt.Errorf("%s: %s members are not decoded by the simulated AWS", path, dst.Type())
	}
	return nil
}

func decodeFloat(raw any) (float64, error) {
	switch v := raw.(type) {
	case json.Number:
		return v.Float64()
	case string:
		switch v {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
	}
	return 0, fmt.Errorf("want a number, got %s", describe(raw))
}

// decodeTime reads epoch seconds (the JSON protocols' default) as the SDK
// does, to the millisecond and in UTC; an RFC 3339 string is accepted too.
func decodeTime(dst reflect.Value, raw any, path string) error {
	switch v := raw.(type) {
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		dst.Set(reflect.ValueOf(time.UnixMilli(int64(math.Round(f * 1e3))).UTC()))
		return nil
	case string:
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		dst.Set(reflect.ValueOf(t.UTC()))
		return nil
	}
	return mismatch(path, "a timestamp", raw)
}

func mismatch(path, want string, got any) error {
	return fmt.Errorf("%s: want %s, got %s", path, want, describe(got))
}

func describe(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

func join(path, member string) string {
	if path == "" {
		return member
	}
	return path + "." + member
}
