package awssim

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"

	smithytime "github.com/aws/smithy-go/time"
)

// encodeXML writes the members of the SDK output struct v as the XML the
// SDK's deserializer reads (the envelope is the protocol's).
func encodeXML(names wireNames, v reflect.Value) ([]byte, error) {
	e := &xmlEncoder{names: names}
	if err := e.members(v); err != nil {
		return nil, internalError(fmt.Errorf("encoding %s: %w", v.Type(), err))
	}
	return e.buf.Bytes(), nil
}

type xmlEncoder struct {
	buf   bytes.Buffer
	names wireNames
}

func (e *xmlEncoder) members(v reflect.Value) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, ok := e.names.xmlElement(t, f)
		if !ok {
			continue
		}
		if err := e.member(name, v.Field(i)); err != nil {
			return fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
		}
	}
	return nil
}

// member writes one member; nil pointers and nil lists are left out, as AWS
// leaves out members it has no value for.
func (e *xmlEncoder) member(name xmlName, v reflect.Value) error {
	switch {
	case v.Type() == bytesType || v.Type() == timeType:
		return e.element(name.name, v)
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return e.member(name, v.Elem())
	case v.Kind() == reflect.Slice:
		if v.IsNil() {
			return nil
		}
		if name.item == "" {
			// A flattened list: each item is an element named like the member.
			for i := range v.Len() {
				if err := e.element(name.name, v.Index(i)); err != nil {
					return err
				}
			}
			return nil
		}
		e.open(name.name)
		for i := range v.Len() {
			if err := e.element(name.item, v.Index(i)); err != nil {
				return err
			}
		}
		e.close(name.name)
		return nil
	case v.Kind() == reflect.Map || v.Kind() == reflect.Interface:
		// No operation the simulator serves returns maps, documents or unions.
		return nil
	default:
		return e.element(name.name, v)
	}
}

// element writes <name>value</name> for a struct, a list item or a scalar.
func (e *xmlEncoder) element(name string, v reflect.Value) error {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	e.open(name)
	if v.Kind() == reflect.Struct && v.Type() != timeType {
		if err := e.members(v); err != nil {
			return err
		}
	} else {
		s, err := formatScalar(v)
		if err != nil {
			return err
		}
		_ = xml.EscapeText(&e.buf, []byte(s))
	}
	e.close(name)
	return nil
}

func (e *xmlEncoder) open(name string)  { e.buf.WriteString("<" + name + ">") }
func (e *xmlEncoder) close(name string) { e.buf.WriteString("</" + name + ">") }

// formatScalar formats v the way AWS's XML responses do (and the SDK parses).
func formatScalar(v reflect.Value) (string, error) {
	switch {
	case v.Type() == timeType:
		return smithytime.FormatDateTime(v.Interface().(time.Time)), nil
	case v.Type() == bytesType:
		return base64.StdEncoding.EncodeToString(v.Bytes()), nil
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), nil
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		return strconv.FormatInt(v.Int(), 10), nil
	case reflect.Float32, reflect.Float64:
		switch f := v.Float(); {
		case math.IsNaN(f):
			return "NaN", nil
		case math.IsInf(f, 1):
			return "Infinity", nil
		case math.IsInf(f, -1):
			return "-Infinity", nil
		}
		return strconv.FormatFloat(v.Float(), 'g', -1, v.Type().Bits()), nil
	}
	return "", fmt.Errorf("a %s cannot be written as XML", v.Type())
}
