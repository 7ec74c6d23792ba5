"""Prints the text of a PDF document (an example file of the everything skills tree)."""
import sys

print(f"would extract the text of {sys.argv[1:]}")
