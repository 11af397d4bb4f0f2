from mini_harness.console import main

main()
