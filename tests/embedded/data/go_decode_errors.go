// Prints encoding/json's syntax errors and encoding/base64's decode errors for the inputs on
// stdin (a JSON array of {"json": s} or {"base64": s}), as the same array with "error" added.
package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
)

type item struct {
	JSON   *string `json:"json,omitempty"`
	Base64 *string `json:"base64,omitempty"`
	Error  string  `json:"error"`
}

func main() {
	var items []item
	if err := json.NewDecoder(os.Stdin).Decode(&items); err != nil {
		panic(err)
	}
	for i := range items {
		var err error
		if items[i].JSON != nil {
			var v interface{}
			err = json.Unmarshal([]byte(*items[i].JSON), &v)
		} else {
			_, err = base64.StdEncoding.DecodeString(*items[i].Base64)
		}
		if err != nil {
			items[i].Error = err.Error()
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	enc.SetEscapeHTML(false)
	enc.Encode(items)
}
