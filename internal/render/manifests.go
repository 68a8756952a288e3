package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// splitYAML decodes every YAML or JSON document in data into an object. On a
// decoding error it returns the objects read so far with the error, as Argo
// CD's splitYAMLOrJSON (reposerver/repository/repository.go) does.
func splitYAML(data []byte) ([]*unstructured.Unstructured, error) {
	d := kubeyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return objs, fmt.Errorf("failed to unmarshal manifest: %w", err)
		}
		if u == nil || len(u.Object) == 0 {
			continue
		}
		objs = append(objs, u)
	}
}

// flatten expands List kinds into their items and drops "items: null" lists,
// as GenerateManifests does upstream.
func flatten(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		switch {
		case obj == nil:
		case obj.IsList():
			err := obj.EachListItem(func(o runtime.Object) error {
				u, ok := o.(*unstructured.Unstructured)
				if !ok {
					return errors.New("resource list item has unexpected type")
				}
				out = append(out, u)
				return nil
			})
			if err != nil {
				return nil, err
			}
		case isNullList(obj):
		default:
			out = append(out, obj)
		}
	}
	return out, nil
}

func isNullList(obj *unstructured.Unstructured) bool {
	if _, ok := obj.Object["spec"]; ok {
		return false
	}
	if _, ok := obj.Object["status"]; ok {
		return false
	}
	items, ok := obj.Object["items"]
	return ok && items == nil
}

// encode writes objects as multi-document YAML with sorted keys, one object
// per document, keeping their order.
func encode(objs []*unstructured.Unstructured) ([]byte, error) {
	objs, err := flatten(objs)
	if err != nil {
		return nil, err
	}
	return marshalObjects(objs)
}

// marshalObjects writes objects as multi-document YAML, one each.
func marshalObjects(objs []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for _, obj := range objs {
		y, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}
