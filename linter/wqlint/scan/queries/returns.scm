(return_statement (_) @return.value) @return
