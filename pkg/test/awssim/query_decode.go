package awssim

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	smithytime "github.com/aws/smithy-go/time"
)

// wireNames maps Go struct fields to their names on the wire.
type wireNames interface {
	// queryKey is the request key of field f of struct type t, or "" when
	// the protocol does not send the field.
	queryKey(t reflect.Type, f reflect.StructField) string
	// listItems is the key prefix of the items of the list sent at key:
	// the items are <listItems(key)>.1, <listItems(key)>.2, ...
	listItems(key string) string
	// xmlElement is the response element of field f of struct type t.
	xmlElement(t reflect.Type, f reflect.StructField) (xmlName, bool)
}

// xmlName is a response member's element and, for a list, its items' element
// (empty for a flattened list, whose items repeat the member's element).
type xmlName struct {
	name string
	item string
}

var (
	timeType  = reflect.TypeOf(time.Time{})
	bytesType = reflect.TypeOf([]byte(nil))
)

// formDecoder fills an SDK input struct from a query-protocol form.
type formDecoder struct {
	form  url.Values
	keys  []string // sorted, for prefix lookups
	used  map[string]bool
	names wireNames
}

// decodeForm fills the struct v from form. Every key must be consumed: an
// unknown key is an UnknownParameter error naming it, as EC2 answers.
func decodeForm(form url.Values, names wireNames, v reflect.Value) error {
	d := &formDecoder{form: form, used: map[string]bool{}, names: names}
	for k := range form {
		d.keys = append(d.keys, k)
	}
	sort.Strings(d.keys)
	if err := d.decodeStruct("", v); err != nil {
		return err
	}
	for _, k := range d.keys {
		if !d.used[k] {
			return clientError("UnknownParameter", fmt.Sprintf("The parameter %s is not recognized", k))
		}
	}
	return nil
}

// hasPrefix reports whether any key starts with prefix.
func (d *formDecoder) hasPrefix(prefix string) bool {
	i := sort.SearchStrings(d.keys, prefix)
	return i < len(d.keys) && strings.HasPrefix(d.keys[i], prefix)
}

func (d *formDecoder) get(key string) (string, bool) {
	vals, ok := d.form[key]
	if !ok {
		return "", false
	}
	d.used[key] = true
	if len(vals) != 1 {
		return "", false
	}
	return vals[0], true
}

func (d *formDecoder) decodeStruct(prefix string, v reflect.Value) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := d.names.queryKey(t, f)
		if name == "" {
			continue
		}
		if err := d.decodeValue(prefix+name, v.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

func (d *formDecoder) decodeValue(key string, v reflect.Value) error {
	switch {
	case v.Type() == timeType || v.Type() == bytesType:
		return d.decodeScalar(key, v)
	case v.Kind() == reflect.Pointer:
		if v.Type().Elem().Kind() == reflect.Struct && v.Type().Elem() != timeType {
			if !d.hasPrefix(key + ".") {
				return nil
			}
			p := reflect.New(v.Type().Elem())
			if err := d.decodeStruct(key+".", p.Elem()); err != nil {
				return err
			}
			v.Set(p)
			return nil
		}
		if _, ok := d.form[key]; !ok {
			return nil
		}
		p := reflect.New(v.Type().Elem())
		if err := d.decodeValue(key, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case v.Kind() == reflect.Struct:
		if !d.hasPrefix(key + ".") {
			return nil
		}
		return d.decodeStruct(key+".", v)
	case v.Kind() == reflect.Slice:
		return d.decodeList(key, v)
	case v.Kind() == reflect.Map || v.Kind() == reflect.Interface:
		// No operation the simulator serves sends maps, documents or unions.
		return nil
	default:
		return d.decodeScalar(key, v)
	}
}

// decodeList reads <items>.1, <items>.2, ... until an index is missing. A
// key with an empty value and no items is an empty list.
func (d *formDecoder) decodeList(key string, v reflect.Value) error {
	items := d.names.listItems(key)
	list := reflect.MakeSlice(v.Type(), 0, 0)
	for i := 1; ; i++ {
		k := items + "." + strconv.Itoa(i)
		if _, ok := d.form[k]; !ok && !d.hasPrefix(k+".") {
			break
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := d.decodeValue(k, elem); err != nil {
			return err
		}
		list = reflect.Append(list, elem)
	}
	if list.Len() == 0 {
		if s, ok := d.get(key); !ok || s != "" {
			return nil
		}
	}
	v.Set(list)
	return nil
}

func (d *formDecoder) decodeScalar(key string, v reflect.Value) error {
	s, ok := d.get(key)
	if !ok {
		if _, present := d.form[key]; present {
			return clientError("InvalidParameterValue", fmt.Sprintf("The parameter %s is given more than once", key))
		}
		return nil
	}
	if err := setScalar(v, s); err != nil {
		return clientError("InvalidParameterValue", fmt.Sprintf("Value (%s) for parameter %s is invalid: %v", s, key, err))
	}
	return nil
}

// setScalar parses s into v the way the SDK's query serializer formats it.
func setScalar(v reflect.Value, s string) error {
	switch {
	case v.Type() == timeType:
		t, err := smithytime.ParseDateTime(s)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(t))
		return nil
	case v.Type() == bytesType:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return err
		}
		v.SetBytes(b)
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		v.SetBool(b)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		n, err := strconv.ParseInt(s, 10, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetInt(n)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetFloat(f)
	default:
		return fmt.Errorf("a %s cannot be sent in a query", v.Type())
	}
	return nil
}
