; Function definitions: name, parameters, body.
(function_definition
  declarator: (_) @fn.declarator
  body: (compound_statement) @fn.body) @fn
