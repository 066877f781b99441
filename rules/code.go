package rules
