"""The agents service's rules: catalog, personas, roster, meter, prompt. No I/O."""
