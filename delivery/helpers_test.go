package delivery_test

import "encoding/json"

var jsonUnmarshal = json.Unmarshal
