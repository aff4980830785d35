package assistant_test

import "github.com/anthropics/anthropic-sdk-go/option"

func optionRetries(n int) option.RequestOption { return option.WithMaxRetries(n) }
