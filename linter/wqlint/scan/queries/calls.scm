; Every call whose callee is a plain name: allocation entry points, wrappers, CPU counts.
(call_expression
  function: (identifier) @call.name
  arguments: (argument_list) @call.args) @call
