from wqlint.entry import main

main()
